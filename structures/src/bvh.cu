// The LBVH builder: dispatch of the stages in detail/bvh_build_kernels.hpp over canopy's
// primitives (reduce, radix sort) and canopy::for_each.
#include <canopy/core/buffer.hpp>
#include <canopy/core/for_each.hpp>
#include <canopy/core/radix_sort.hpp>
#include <canopy/core/reduce.hpp>
#include <canopy/structures/bvh.hpp>
#include <canopy/structures/detail/bvh_build_kernels.hpp>
#include <canopy/structures/detail/bvh_treelet_warp.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace canopy {

namespace {

constexpr const char* builder_name = "canopy::bvh_builder";

//! A stage scope when a timer was passed, nothing otherwise.
struct optional_stage {
  std::optional<stage_timer::scoped_stage> scope;
  optional_stage(stage_timer* timer, const char* name) {
    if (timer) scope.emplace(*timer, name);
  }
};

// One thread per node: depth by walking the parent links, then an atomic slot in the output.
struct collect_node_boxes {
  span<const bvh_node> nodes;
  span<const std::uint32_t> parents;
  std::uint32_t min_depth, max_depth;
  span<aabb> out_boxes;
  span<std::uint32_t> out_depths;
  std::uint32_t* count;
  CANOPY_HD void operator()(std::size_t i) const {
    std::uint32_t depth = 0;
    for (std::uint32_t p = parents[i]; p != bvh_no_parent && depth <= max_depth; p = parents[p]) ++depth;
    if (depth < min_depth || depth > max_depth) return;
    const std::uint32_t slot = detail::bvh_atomic_add(count, 1u);
    if (slot < out_boxes.size()) {
      out_boxes[slot] = nodes[i].box;
      out_depths[slot] = depth;
    }
  }
};

}  // namespace

bvh_builder::bvh_builder(context& ctx, bvh_build_options options) : ctx_(&ctx), options_(options) {
  require(options.morton_bits == 30 || options.morton_bits == 63, builder_name, "options.morton_bits",
          "must be 30 or 63, got " + std::to_string(options.morton_bits));
  require(options.treelet_rounds >= 0 && options.treelet_rounds <= 16, builder_name, "options.treelet_rounds",
          "must be in [0, 16], got " + std::to_string(options.treelet_rounds));
  require(options.treelet_leaves >= 3 && options.treelet_leaves <= detail::treelet_leaves, builder_name,
          "options.treelet_leaves", "must be in [3, 7], got " + std::to_string(options.treelet_leaves));
  require(options.treelet_min_primitives >= 3, builder_name, "options.treelet_min_primitives",
          "must be at least 3, got " + std::to_string(options.treelet_min_primitives));
  require(options.traversal_cost >= 0.0f && options.intersection_cost > 0.0f, builder_name, "options",
          "SAH costs must be finite, traversal_cost >= 0 and intersection_cost > 0");
  for (auto* b : {&parents_, &primitive_indices_, &index_scratch_, &codes32_, &counters_, &subtree_sizes_})
    *b = buffer<std::uint32_t>(ctx, 0);
  nodes_ = buffer<bvh_node>(ctx, 0);
  codes64_ = buffer<std::uint64_t>(ctx, 0);
  primitive_boxes_ = buffer<aabb>(ctx, 0);
  centroid_boxes_ = buffer<aabb>(ctx, 0);
  node_costs_ = buffer<float>(ctx, 0);
  treelet_starts_ = buffer<std::uint8_t>(ctx, 0);
  invalid_count_ = buffer<std::uint32_t>(ctx, 1);
  invalid_count_.fill_bytes(0);
  centroid_bounds_ = buffer<aabb>(ctx, 1);
}

bvh_builder::~bvh_builder() = default;

void bvh_builder::clear() {
  for (auto* b : {&parents_, &primitive_indices_, &index_scratch_, &codes32_, &counters_, &subtree_sizes_})
    b->release();
  nodes_.release();
  codes64_.release();
  primitive_boxes_.release();
  centroid_boxes_.release();
  node_costs_.release();
  treelet_starts_.release();
  primitive_count_ = node_count_ = 0;
  kind_ = kind::none;
}

void bvh_builder::prepare(std::size_t n) {
  require(n < (std::size_t(1) << 31), builder_name, "primitives",
          "at most 2^31 - 1 primitives, got " + std::to_string(n));
  primitive_count_ = n;
  node_count_ = n == 0 ? 0 : 2 * n - 1;
  nodes_.resize_discard(node_count_);
  parents_.resize_discard(node_count_);
  primitive_indices_.resize_discard(n);
  index_scratch_.resize_discard(n);
  primitive_boxes_.resize_discard(n);
  centroid_boxes_.resize_discard(n);
  if (options_.morton_bits == 30) {
    codes32_.resize_discard(n);
  } else {
    codes64_.resize_discard(n);
  }
  counters_.resize_discard(n == 0 ? 0 : n - 1);
  const bool optimize = options_.quality == bvh_quality::treelet;
  node_costs_.resize_discard(optimize ? node_count_ : 0);
  subtree_sizes_.resize_discard(optimize ? node_count_ : 0);
  treelet_starts_.resize_discard(optimize && ctx_->is_cuda() ? node_count_ : 0);
}

template <class Source>
void bvh_builder::build(const Source& source, std::size_t n, stage_timer* timer) {
  context& ctx = *ctx_;
  prepare(n);
  invalid_count_.fill_bytes(0);
  if (n == 0) return;
  {
    optional_stage stage(timer, "morton");
    for_each(ctx, n,
             detail::compute_primitive_boxes<Source>{source, primitive_boxes_.view(), centroid_boxes_.view(),
                                                     invalid_count_.data()});
    reduce(ctx, span<const aabb>(centroid_boxes_.view()), centroid_bounds_.view(), empty_aabb(),
           detail::merge_boxes{});
    if (options_.morton_bits == 30) {
      for_each(ctx, n,
               detail::compute_morton_codes<std::uint32_t>{primitive_boxes_.view(), centroid_bounds_.data(),
                                                           codes32_.view(), index_scratch_.view()});
    } else {
      for_each(ctx, n,
               detail::compute_morton_codes<std::uint64_t>{primitive_boxes_.view(), centroid_bounds_.data(),
                                                           codes64_.view(), index_scratch_.view()});
    }
  }
  {
    optional_stage stage(timer, "sort");
    if (options_.morton_bits == 30) {
      radix_sort_pairs(ctx, codes32_.view(), index_scratch_.view(), 0, 30);
    } else {
      radix_sort_pairs(ctx, codes64_.view(), index_scratch_.view(), 0, 63);
    }
    std::swap(primitive_indices_, index_scratch_);
  }
  {
    optional_stage stage(timer, "hierarchy");
    if (options_.morton_bits == 30) {
      for_each(ctx, n,
               detail::build_hierarchy<std::uint32_t>{codes32_.view(), primitive_indices_.view(),
                                                      primitive_boxes_.view(), nodes_.view(), parents_.view(),
                                                      std::int64_t(n)});
    } else {
      for_each(ctx, n,
               detail::build_hierarchy<std::uint64_t>{codes64_.view(), primitive_indices_.view(),
                                                      primitive_boxes_.view(), nodes_.view(), parents_.view(),
                                                      std::int64_t(n)});
    }
  }
  const bool optimize = options_.quality == bvh_quality::treelet && options_.treelet_rounds > 0 && n >= 3;
  detail::bvh_cost_arrays cost;
  cost.traversal_cost = options_.traversal_cost;
  cost.intersection_cost = options_.intersection_cost;
  if (optimize) {
    cost.costs = node_costs_.data();
    cost.sizes = subtree_sizes_.data();
  }
  {
    optional_stage stage(timer, "bounds");
    counters_.fill_bytes(0);
    for_each(ctx, n, detail::propagate_bounds{nodes_.view(), parents_.view(), counters_.view(), cost, n});
  }
  if (optimize) {
    optional_stage stage(timer, "optimize");
    for (int round = 0; round < options_.treelet_rounds; ++round) {
      counters_.fill_bytes(0);
      const std::uint64_t min_size = std::uint64_t(options_.treelet_min_primitives) << round;
      const detail::restructure_treelets pass{nodes_.view(), parents_.view(), counters_.view(), cost, n,
                                              std::uint32_t(std::min<std::uint64_t>(min_size, 0xffffffffu)),
                                              options_.treelet_leaves};
      if (ctx.is_cuda()) {
        // A warp per treelet (same trees as the host path, ~30x fewer dependent steps per treelet).
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
        detail::launch_restructure_treelets_warp(ctx, pass, treelet_starts_.view());
#else
        detail::throw_cuda_from_host_compiler("canopy::bvh_builder");
#endif
      } else {
        for_each(ctx, n, pass);
      }
    }
  }
}

template <class Source>
void bvh_builder::refit(const Source& source, std::size_t n, stage_timer* timer) {
  context& ctx = *ctx_;
  optional_stage stage(timer, "refit");
  invalid_count_.fill_bytes(0);
  if (n == 0) return;
  for_each(ctx, n,
           detail::refit_leaves<Source>{source, primitive_indices_.view(), nodes_.view(), n, invalid_count_.data()});
  counters_.fill_bytes(0);
  for_each(ctx, n, detail::propagate_bounds{nodes_.view(), parents_.view(), counters_.view(), {}, n});
}

void bvh_builder::build_triangles(span<const vec3> vertices, span<const std::uint32_t> indices, stage_timer* timer) {
  const char* fn = "canopy::bvh_builder::build_triangles";
  check_span(vertices, ctx_->space(), fn, "vertices");
  check_span(indices, ctx_->space(), fn, "indices");
  require(indices.size() % 3 == 0, fn, "indices",
          "size " + std::to_string(indices.size()) + " is not a multiple of 3");
  build(detail::triangle_source{vertices, indices}, indices.size() / 3, timer);
  kind_ = kind::triangles;
}

void bvh_builder::build_boxes(span<const aabb> boxes, stage_timer* timer) {
  check_span(boxes, ctx_->space(), "canopy::bvh_builder::build_boxes", "boxes");
  build(detail::box_source{boxes}, boxes.size(), timer);
  kind_ = kind::boxes;
}

void bvh_builder::build_points(span<const vec3> points, stage_timer* timer) {
  check_span(points, ctx_->space(), "canopy::bvh_builder::build_points", "points");
  build(detail::point_source{points}, points.size(), timer);
  kind_ = kind::points;
}

void bvh_builder::refit_triangles(span<const vec3> vertices, span<const std::uint32_t> indices, stage_timer* timer) {
  const char* fn = "canopy::bvh_builder::refit_triangles";
  check_span(vertices, ctx_->space(), fn, "vertices");
  check_span(indices, ctx_->space(), fn, "indices");
  require(kind_ == kind::triangles, fn, "this", "the last build was not build_triangles()");
  require(indices.size() == 3 * primitive_count_, fn, "indices",
          "holds " + std::to_string(indices.size() / 3) + " triangles, the tree was built over " +
              std::to_string(primitive_count_));
  refit(detail::triangle_source{vertices, indices}, primitive_count_, timer);
}

void bvh_builder::refit_boxes(span<const aabb> boxes, stage_timer* timer) {
  const char* fn = "canopy::bvh_builder::refit_boxes";
  check_span(boxes, ctx_->space(), fn, "boxes");
  require(kind_ == kind::boxes, fn, "this", "the last build was not build_boxes()");
  require(boxes.size() == primitive_count_, fn, "boxes",
          "holds " + std::to_string(boxes.size()) + " boxes, the tree was built over " +
              std::to_string(primitive_count_));
  refit(detail::box_source{boxes}, primitive_count_, timer);
}

void bvh_builder::refit_points(span<const vec3> points, stage_timer* timer) {
  const char* fn = "canopy::bvh_builder::refit_points";
  check_span(points, ctx_->space(), fn, "points");
  require(kind_ == kind::points, fn, "this", "the last build was not build_points()");
  require(points.size() == primitive_count_, fn, "points",
          "holds " + std::to_string(points.size()) + " points, the tree was built over " +
              std::to_string(primitive_count_));
  refit(detail::point_source{points}, primitive_count_, timer);
}

bvh_view bvh_builder::view() const {
  bvh_view v;
  v.nodes = span<const bvh_node>(nodes_.data(), node_count_, ctx_->space());
  v.primitive_indices = span<const std::uint32_t>(primitive_indices_.data(), primitive_count_, ctx_->space());
  v.parents = span<const std::uint32_t>(parents_.data(), node_count_, ctx_->space());
  v.root = 0;
  return v;
}

span<const std::uint32_t> bvh_builder::invalid_primitive_count() const { return invalid_count_.view(); }

double bvh_sah_cost(const bvh_node* nodes, std::size_t node_count, std::uint32_t root, float traversal_cost,
                    float intersection_cost) {
  if (node_count == 0) return 0.0;
  double internal = 0, leaves = 0;
  for (std::size_t i = 0; i < node_count; ++i) {
    const double area = surface_area(nodes[i].box);
    if (is_leaf(nodes[i])) {
      leaves += area * leaf_count(nodes[i]);
    } else {
      internal += area;
    }
  }
  const double root_area = surface_area(nodes[root].box);
  if (!(root_area > 0)) return intersection_cost * double(node_count == 1 ? leaf_count(nodes[root]) : 1);
  return (traversal_cost * internal + intersection_cost * leaves) / root_area;
}

bvh_statistics bvh_builder::statistics() const {
  bvh_statistics s;
  s.primitive_count = primitive_count_;
  s.node_count = node_count_;
  s.invalid_primitives = invalid_count_.to_host()[0];
  if (node_count_ == 0) return s;
  const std::vector<bvh_node> nodes = nodes_.to_host();
  std::vector<std::pair<std::uint32_t, std::uint32_t>> stack{{0u, 0u}};
  double depth_sum = 0;
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    require(node < nodes.size() && depth <= node_count_, "canopy::bvh_builder::statistics", "this",
            "the tree is malformed (a child index out of range or a cycle)");
    const bvh_node& x = nodes[node];
    if (is_leaf(x)) {
      ++s.leaf_count;
      depth_sum += depth;
      s.max_depth = std::max<std::size_t>(s.max_depth, depth);
    } else {
      stack.push_back({x.left_or_first, depth + 1});
      stack.push_back({x.right_or_count, depth + 1});
    }
  }
  s.average_leaf_depth = s.leaf_count ? depth_sum / double(s.leaf_count) : 0.0;
  s.sah_cost = bvh_sah_cost(nodes.data(), nodes.size(), 0, options_.traversal_cost, options_.intersection_cost);
  return s;
}

void bvh_node_boxes(context& ctx, const bvh_view& bvh, std::uint32_t min_depth, std::uint32_t max_depth,
                    span<aabb> out_boxes, span<std::uint32_t> out_depths, span<std::uint32_t> count) {
  const char* fn = "canopy::bvh_node_boxes";
  check_span(bvh.nodes, ctx.space(), fn, "bvh.nodes");
  check_span(bvh.parents, ctx.space(), fn, "bvh.parents");
  check_span(out_boxes, ctx.space(), fn, "out_boxes");
  check_span(out_depths, ctx.space(), fn, "out_depths");
  check_span(count, ctx.space(), fn, "count");
  require(count.size() == 1, fn, "count", "must hold exactly 1 element");
  require(out_depths.size() >= out_boxes.size(), fn, "out_depths", "must be at least as long as out_boxes");
  require(bvh.parents.size() == bvh.nodes.size(), fn, "bvh.parents", "must have one entry per node");
  detail::fill_bytes(ctx, count.data(), count.space(), 0, sizeof(std::uint32_t));
  for_each(ctx, bvh.nodes.size(),
           collect_node_boxes{bvh.nodes, bvh.parents, min_depth, max_depth, out_boxes, out_depths, count.data()});
}

}  // namespace canopy
