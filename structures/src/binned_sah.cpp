// The host binned-SAH builder: the quality reference the LBVH's SAH cost is compared with.
#include <canopy/structures/binned_sah.hpp>
#include <canopy/structures/scene.hpp>

#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <string>

namespace canopy {

namespace {

struct builder {
  const std::vector<aabb>& boxes;
  std::vector<vec3> centroids;
  std::vector<std::uint32_t>& ids;
  std::vector<bvh_node>& nodes;
  std::atomic<std::uint32_t> next_node{1};
  binned_sah_options options;

  // Builds the subtree over ids[begin, end) into node `index`.
  void build(std::uint32_t index, std::uint32_t begin, std::uint32_t end) {
    aabb box = empty_aabb(), cbox = empty_aabb();
    for (std::uint32_t i = begin; i < end; ++i) {
      box = merge(box, boxes[ids[i]]);
      cbox = grow(cbox, centroids[ids[i]]);
    }
    bvh_node& node = nodes[index];
    node.box = box;
    const std::uint32_t count = end - begin;
    if (count == 1) {
      node.left_or_first = begin;
      node.right_or_count = bvh_leaf_flag | 1u;
      return;
    }
    std::uint32_t mid = split(begin, end, cbox);
    if (mid == begin || mid == end) mid = begin + count / 2;  // coincident centroids: split by order
    const std::uint32_t left = next_node.fetch_add(2);
    node.left_or_first = left;
    node.right_or_count = left + 1;
    if (count > 4096) {
      tbb::task_group g;
      g.run([&] { build(left, begin, mid); });
      build(left + 1, mid, end);
      g.wait();
    } else {
      build(left, begin, mid);
      build(left + 1, mid, end);
    }
  }

  // Best binned split over the three axes; partitions ids and returns the first right index.
  std::uint32_t split(std::uint32_t begin, std::uint32_t end, const aabb& cbox) {
    constexpr int max_bins = 256;
    const int bins = options.bins;
    float best_cost = std::numeric_limits<float>::infinity();
    int best_axis = -1, best_bin = 0;
    for (int axis = 0; axis < 3; ++axis) {
      const float lo = component(cbox.lo, axis), hi = component(cbox.hi, axis);
      if (!(hi > lo)) continue;
      const float scale = float(bins) / (hi - lo);
      aabb bin_box[max_bins];
      std::uint32_t bin_count[max_bins] = {};
      for (int b = 0; b < bins; ++b) bin_box[b] = empty_aabb();
      for (std::uint32_t i = begin; i < end; ++i) {
        const int b = std::min(bins - 1, int((component(centroids[ids[i]], axis) - lo) * scale));
        bin_box[b] = merge(bin_box[b], boxes[ids[i]]);
        ++bin_count[b];
      }
      float right_area[max_bins];
      std::uint32_t right_count[max_bins];
      aabb acc = empty_aabb();
      std::uint32_t cnt = 0;
      for (int b = bins - 1; b > 0; --b) {
        acc = merge(acc, bin_box[b]);
        cnt += bin_count[b];
        right_area[b] = surface_area(acc);
        right_count[b] = cnt;
      }
      acc = empty_aabb();
      cnt = 0;
      for (int b = 0; b < bins - 1; ++b) {
        acc = merge(acc, bin_box[b]);
        cnt += bin_count[b];
        if (cnt == 0 || right_count[b + 1] == 0) continue;
        // Leaves hold one primitive, so a child's cost is estimated as area * count.
        const float cost = surface_area(acc) * float(cnt) + right_area[b + 1] * float(right_count[b + 1]);
        if (cost < best_cost) best_cost = cost, best_axis = axis, best_bin = b;
      }
    }
    if (best_axis < 0) return begin;
    const float lo = component(cbox.lo, best_axis), hi = component(cbox.hi, best_axis);
    const float scale = float(bins) / (hi - lo);
    auto* mid = std::partition(ids.data() + begin, ids.data() + end, [&](std::uint32_t id) {
      return std::min(bins - 1, int((component(centroids[id], best_axis) - lo) * scale)) <= best_bin;
    });
    return std::uint32_t(mid - ids.data());
  }
};

}  // namespace

double host_bvh::sah_cost(float traversal_cost, float intersection_cost) const {
  return bvh_sah_cost(nodes.data(), nodes.size(), 0, traversal_cost, intersection_cost);
}

bvh_view host_bvh::view() const {
  bvh_view v;
  v.nodes = host_span(nodes.data(), nodes.size());
  v.primitive_indices = host_span(primitive_indices.data(), primitive_indices.size());
  v.root = 0;
  return v;
}

host_bvh build_binned_sah(const std::vector<aabb>& boxes, const binned_sah_options& options) {
  require(options.bins >= 2 && options.bins <= 256, "canopy::build_binned_sah", "options.bins",
          "must be in [2, 256], got " + std::to_string(options.bins));
  require(boxes.size() < (std::size_t(1) << 31), "canopy::build_binned_sah", "boxes", "at most 2^31 - 1 boxes");
  host_bvh out;
  const std::size_t n = boxes.size();
  if (n == 0) return out;
  out.nodes.resize(2 * n - 1);
  out.primitive_indices.resize(n);
  for (std::size_t i = 0; i < n; ++i) out.primitive_indices[i] = std::uint32_t(i);
  builder b{boxes, {}, out.primitive_indices, out.nodes, {1u}, options};
  b.centroids.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    b.centroids[i] = is_empty(boxes[i]) ? vec3{0.0f, 0.0f, 0.0f} : centroid(boxes[i]);
  b.build(0, 0, std::uint32_t(n));
  return out;
}

std::vector<aabb> triangle_boxes(const mesh& m) {
  std::vector<aabb> boxes(m.triangle_count());
  for (std::size_t t = 0; t < boxes.size(); ++t)
    boxes[t] = triangle_aabb(m.vertices[m.indices[3 * t]], m.vertices[m.indices[3 * t + 1]],
                             m.vertices[m.indices[3 * t + 2]]);
  return boxes;
}

}  // namespace canopy
