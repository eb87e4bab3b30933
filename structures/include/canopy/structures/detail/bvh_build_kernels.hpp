// canopy/structures/detail/bvh_build_kernels.hpp — the per-element functors of the LBVH builder.
//
// [SECTION] atomics and coherent loads shared by both backends
// [SECTION] primitive sources        triangles, boxes, points -> primitive box (empty = invalid)
// [SECTION] morton                   primitive boxes, centroid point boxes, Morton codes
// [SECTION] hierarchy                Karras 2012 radix tree over sorted codes
// [SECTION] bounds                   bottom-up boxes (and SAH costs) with per-node arrival counters
// [SECTION] treelet restructuring    Karras & Aila 2013, one thread per treelet (host path;
//                                    the CUDA path is a warp per treelet, bvh_treelet_warp.hpp)
//
// Every functor is CANOPY_HD and runs unchanged under canopy::for_each on both backends. The
// bottom-up passes rely on: (1) a thread publishes a node (box, cost, links) before incrementing
// its parent's counter (device: __threadfence; host: the acq_rel atomic); (2) the thread that
// arrives second reads its children with loads that bypass L1 (device: __ldcg), because they may
// have been written by another SM.
#pragma once

#include <canopy/core/config.hpp>
#include <canopy/core/span.hpp>
#include <canopy/structures/bvh.hpp>
#include <canopy/structures/geometry.hpp>
#include <canopy/structures/morton.hpp>

#include <cstdint>

namespace canopy {
namespace detail {

// ---------------------------------------------------------------------------------------------
// [SECTION] atomics and coherent loads

CANOPY_HD inline std::uint32_t bvh_atomic_add(std::uint32_t* p, std::uint32_t v) {
#if CANOPY_DEVICE_PASS
  return atomicAdd(p, v);
#else
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

//! Makes this thread's earlier writes visible to any thread that later sees its atomic.
CANOPY_HD inline void bvh_publish_fence() {
#if CANOPY_DEVICE_PASS
  __threadfence();
#else
  __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

CANOPY_HD inline bvh_node bvh_load_node(const bvh_node* p) {
#if CANOPY_DEVICE_PASS
  const float4 a = __ldcg(reinterpret_cast<const float4*>(p));
  const float4 b = __ldcg(reinterpret_cast<const float4*>(p) + 1);
  bvh_node n;
  n.box.lo = vec3{a.x, a.y, a.z};
  n.box.hi = vec3{a.w, b.x, b.y};
  n.left_or_first = __float_as_uint(b.z);
  n.right_or_count = __float_as_uint(b.w);
  return n;
#else
  return *p;
#endif
}

template <class T>
CANOPY_HD inline T bvh_load(const T* p) {
#if CANOPY_DEVICE_PASS
  return __ldcg(p);
#else
  return *p;
#endif
}

// ---------------------------------------------------------------------------------------------
// [SECTION] primitive sources

//! Box of triangle i; empty when an index is out of range or a vertex is not finite.
struct triangle_source {
  span<const vec3> vertices;
  span<const std::uint32_t> indices;
  CANOPY_HD aabb box(std::size_t i) const {
    const std::uint32_t ia = indices[3 * i], ib = indices[3 * i + 1], ic = indices[3 * i + 2];
    const std::size_t nv = vertices.size();
    if (ia >= nv || ib >= nv || ic >= nv) return empty_aabb();
    const vec3 a = vertices[ia], b = vertices[ib], c = vertices[ic];
    if (!is_finite(a) || !is_finite(b) || !is_finite(c)) return empty_aabb();
    return triangle_aabb(a, b, c);
  }
};

//! Box i itself; empty when not finite or lo > hi on some axis.
struct box_source {
  span<const aabb> boxes;
  CANOPY_HD aabb box(std::size_t i) const {
    const aabb b = boxes[i];
    if (!is_finite(b.lo) || !is_finite(b.hi) || is_empty(b)) return empty_aabb();
    return b;
  }
};

//! The point's degenerate box; empty when not finite.
struct point_source {
  span<const vec3> points;
  CANOPY_HD aabb box(std::size_t i) const {
    const vec3 p = points[i];
    return is_finite(p) ? point_aabb(p) : empty_aabb();
  }
};

// ---------------------------------------------------------------------------------------------
// [SECTION] morton

//! primitive_boxes[i] and centroid_boxes[i] (a point box, or empty for an invalid primitive);
//! counts invalid primitives in invalid_count[0].
template <class Source>
struct compute_primitive_boxes {
  Source source;
  span<aabb> primitive_boxes;
  span<aabb> centroid_boxes;
  std::uint32_t* invalid_count;
  CANOPY_HD void operator()(std::size_t i) const {
    const aabb b = source.box(i);
    primitive_boxes[i] = b;
    if (is_empty(b)) {
      centroid_boxes[i] = empty_aabb();
      bvh_atomic_add(invalid_count, 1u);
    } else {
      centroid_boxes[i] = point_aabb(centroid(b));
    }
  }
};

struct merge_boxes {
  CANOPY_HD aabb operator()(const aabb& a, const aabb& b) const { return merge(a, b); }
};

//! Position of p inside the bounds, in [0, 1] per axis (0.5 on an axis of zero extent). Halves
//! before subtracting so that bounds near ±FLT_MAX do not overflow to inf.
CANOPY_HD inline vec3 bvh_normalize(vec3 p, const aabb& bounds) {
  const vec3 lo = bounds.lo * 0.5f, hi = bounds.hi * 0.5f, q = p * 0.5f;
  const vec3 e = hi - lo;
  return vec3{e.x > 0.0f ? (q.x - lo.x) / e.x : 0.5f, e.y > 0.0f ? (q.y - lo.y) / e.y : 0.5f,
              e.z > 0.0f ? (q.z - lo.z) / e.z : 0.5f};
}

//! Morton code of primitive i's centroid over centroid_bounds[0]; invalid primitives get the
//! largest code so that they sort last. values[i] = i (the sort's payload).
template <class Code>
struct compute_morton_codes {
  span<const aabb> primitive_boxes;
  const aabb* centroid_bounds;
  span<Code> codes;
  span<std::uint32_t> values;
  CANOPY_HD void operator()(std::size_t i) const {
    const aabb b = primitive_boxes[i];
    values[i] = static_cast<std::uint32_t>(i);
    if (is_empty(b)) {
      codes[i] = sizeof(Code) == 4 ? Code(0x3fffffffu) : Code(0x7fffffffffffffffull);
      return;
    }
    const vec3 u = bvh_normalize(centroid(b), *centroid_bounds);
    if (sizeof(Code) == 4) {
      codes[i] = Code(morton_encode_30(morton_quantize(u.x, 1024), morton_quantize(u.y, 1024),
                                       morton_quantize(u.z, 1024)));
    } else {
      const std::uint32_t cells = 1u << 21;
      codes[i] = Code(morton_encode_63(morton_quantize(u.x, cells), morton_quantize(u.y, cells),
                                       morton_quantize(u.z, cells)));
    }
  }
};

// ---------------------------------------------------------------------------------------------
// [SECTION] hierarchy

CANOPY_HD inline int bvh_clz(std::uint32_t x) {
#if CANOPY_DEVICE_PASS
  return __clz(x);
#else
  return x == 0 ? 32 : __builtin_clz(x);
#endif
}
CANOPY_HD inline int bvh_clz(std::uint64_t x) {
#if CANOPY_DEVICE_PASS
  return __clzll(static_cast<long long>(x));
#else
  return x == 0 ? 64 : __builtin_clzll(x);
#endif
}

//! Karras 2012: internal node i of n - 1 covers a range of sorted codes; equal codes are told
//! apart by their position (delta = code bits + common prefix of the positions).
template <class Code>
struct build_hierarchy {
  span<const Code> codes;
  span<const std::uint32_t> sorted_primitives;
  span<const aabb> primitive_boxes;
  span<bvh_node> nodes;
  span<std::uint32_t> parents;
  std::int64_t n;

  CANOPY_HD int delta(std::int64_t i, std::int64_t j) const {
    if (j < 0 || j >= n) return -1;
    const Code a = codes[i], b = codes[j];
    if (a != b) return bvh_clz(Code(a ^ b));
    return int(sizeof(Code) * 8) + bvh_clz(std::uint32_t(i ^ j));
  }

  CANOPY_HD void operator()(std::size_t idx) const {
    const std::int64_t i = std::int64_t(idx);
    // Leaf i (every thread also writes one leaf; thread n - 1 writes the last one).
    write_leaf(i);
    if (i == 0) parents[0] = bvh_no_parent;
    if (i >= n - 1) return;
    const int d = delta(i, i + 1) - delta(i, i - 1) >= 0 ? 1 : -1;
    const int delta_min = delta(i, i - d);
    std::int64_t lmax = 2;
    while (delta(i, i + lmax * d) > delta_min) lmax *= 2;
    std::int64_t l = 0;
    for (std::int64_t t = lmax / 2; t >= 1; t /= 2)
      if (delta(i, i + (l + t) * d) > delta_min) l += t;
    const std::int64_t j = i + l * d;
    const int delta_node = delta(i, j);
    std::int64_t s = 0;
    std::int64_t t = l;
    do {
      t = (t + 1) / 2;
      if (delta(i, i + (s + t) * d) > delta_node) s += t;
    } while (t > 1);
    const std::int64_t gamma = i + s * d + (d < 0 ? -1 : 0);
    const std::int64_t lo = i < j ? i : j, hi = i < j ? j : i;
    const std::uint32_t left = std::uint32_t(lo == gamma ? (n - 1) + gamma : gamma);
    const std::uint32_t right = std::uint32_t(hi == gamma + 1 ? (n - 1) + gamma + 1 : gamma + 1);
    bvh_node& node = nodes[std::size_t(i)];
    node.left_or_first = left;
    node.right_or_count = right;
    parents[left] = std::uint32_t(i);
    parents[right] = std::uint32_t(i);
  }

  CANOPY_HD void write_leaf(std::int64_t i) const {
    bvh_node& leaf = nodes[std::size_t(n - 1 + i)];
    leaf.box = primitive_boxes[sorted_primitives[std::size_t(i)]];
    leaf.left_or_first = std::uint32_t(i);
    leaf.right_or_count = bvh_leaf_flag | 1u;
  }
};

//! Refit: leaf i's box from the current primitive boxes.
template <class Source>
struct refit_leaves {
  Source source;
  span<const std::uint32_t> sorted_primitives;
  span<bvh_node> nodes;
  std::size_t n;
  std::uint32_t* invalid_count;
  CANOPY_HD void operator()(std::size_t i) const {
    const aabb b = source.box(sorted_primitives[i]);
    if (is_empty(b)) bvh_atomic_add(invalid_count, 1u);
    nodes[n - 1 + i].box = b;
  }
};

// ---------------------------------------------------------------------------------------------
// [SECTION] bounds

//! SAH constants and the per-node arrays the quality step keeps (null when it is off).
struct bvh_cost_arrays {
  float* costs = nullptr;              // SAH cost (unnormalised) of the subtree
  std::uint32_t* sizes = nullptr;      // primitives beneath
  float traversal_cost = 1.0f;
  float intersection_cost = 1.0f;
};

//! One thread per leaf walks up; the second thread to reach an internal node computes its box
//! (and cost, size) from both children, the first stops there. counters must be zero.
struct propagate_bounds {
  span<bvh_node> nodes;
  span<const std::uint32_t> parents;
  span<std::uint32_t> counters;
  bvh_cost_arrays cost;
  std::size_t n;

  CANOPY_HD void operator()(std::size_t i) const {
    std::uint32_t node = std::uint32_t(n - 1 + i);
    if (cost.costs) {
      const bvh_node leaf = nodes[node];
      cost.costs[node] = cost.intersection_cost * surface_area(leaf.box) * float(leaf_count(leaf));
      cost.sizes[node] = leaf_count(leaf);
    }
    for (;;) {
      const std::uint32_t parent = parents[node];
      if (parent == bvh_no_parent) return;
      bvh_publish_fence();
      if (bvh_atomic_add(&counters[parent], 1u) == 0) return;
      bvh_node p = bvh_load_node(&nodes[parent]);
      const bvh_node a = bvh_load_node(&nodes[p.left_or_first]);
      const bvh_node b = bvh_load_node(&nodes[p.right_or_count]);
      nodes[parent].box = merge(a.box, b.box);
      if (cost.costs) {
        // Non-fused: both backends get the same costs, hence the same treelet decisions.
        cost.costs[parent] = add_rn(add_rn(mul_rn(cost.traversal_cost, surface_area(nodes[parent].box)),
                                           bvh_load(&cost.costs[p.left_or_first])),
                                    bvh_load(&cost.costs[p.right_or_count]));
        cost.sizes[parent] = bvh_load(&cost.sizes[p.left_or_first]) + bvh_load(&cost.sizes[p.right_or_count]);
      }
      node = parent;
    }
  }
};

// ---------------------------------------------------------------------------------------------
// [SECTION] treelet restructuring

constexpr int treelet_leaves = 7;
constexpr int treelet_subsets = 1 << treelet_leaves;

//! Bottom-up like propagate_bounds; at each internal node with at least min_size primitives
//! beneath, forms a treelet of up to 7 leaves (repeatedly expanding the treelet leaf of largest
//! area) and replaces its internal nodes by the topology of least SAH cost, found by dynamic
//! programming over the 2^7 leaf subsets. Nodes of the treelet are reused in place, so the node
//! array keeps its size and every leaf keeps its index. counters must be zero.
struct restructure_treelets {
  span<bvh_node> nodes;
  span<std::uint32_t> parents;
  span<std::uint32_t> counters;
  bvh_cost_arrays cost;
  std::size_t n;
  std::uint32_t min_size;
  int max_leaves;  // 3..treelet_leaves

  CANOPY_HD void operator()(std::size_t i) const {
    std::uint32_t node = std::uint32_t(n - 1 + i);
    for (;;) {
      const std::uint32_t parent = parents[node];
      if (parent == bvh_no_parent) return;
      bvh_publish_fence();
      if (bvh_atomic_add(&counters[parent], 1u) == 0) return;
      if (bvh_load(&cost.sizes[parent]) >= min_size) restructure(parent);
      node = parent;
    }
  }

  CANOPY_HD void restructure(std::uint32_t root) const {
    std::uint32_t leaves[treelet_leaves];
    aabb leaf_boxes[treelet_leaves];
    std::uint32_t internals[treelet_leaves - 1];
    const bvh_node r = bvh_load_node(&nodes[root]);
    int leaf_n = 2, internal_n = 1;
    internals[0] = root;
    leaves[0] = r.left_or_first;
    leaves[1] = r.right_or_count;
    bvh_node leaf_nodes[treelet_leaves];
    leaf_nodes[0] = bvh_load_node(&nodes[leaves[0]]);
    leaf_nodes[1] = bvh_load_node(&nodes[leaves[1]]);
    while (leaf_n < max_leaves) {
      int pick = -1;
      float pick_area = -1.0f;
      for (int k = 0; k < leaf_n; ++k) {
        if (is_leaf(leaf_nodes[k])) continue;
        const float a = surface_area(leaf_nodes[k].box);
        if (a > pick_area) pick_area = a, pick = k;
      }
      if (pick < 0) break;
      const bvh_node expanded = leaf_nodes[pick];
      internals[internal_n++] = leaves[pick];
      leaves[pick] = expanded.left_or_first;
      leaf_nodes[pick] = bvh_load_node(&nodes[leaves[pick]]);
      leaves[leaf_n] = expanded.right_or_count;
      leaf_nodes[leaf_n] = bvh_load_node(&nodes[leaves[leaf_n]]);
      ++leaf_n;
    }
    if (leaf_n < 3) return;  // two leaves: one topology only
    float leaf_costs[treelet_leaves];
    std::uint32_t leaf_sizes[treelet_leaves];
    for (int k = 0; k < leaf_n; ++k) {
      leaf_boxes[k] = leaf_nodes[k].box;
      leaf_costs[k] = bvh_load(&cost.costs[leaves[k]]);
      leaf_sizes[k] = bvh_load(&cost.sizes[leaves[k]]);
    }
    // opt[s]: least cost of a subtree over leaf set s; split[s]: the part holding s's lowest leaf.
    float opt[treelet_subsets];
    std::uint8_t split[treelet_subsets];
    // Subset boxes, built incrementally: box(s) = box(s without its lowest leaf) + that leaf.
    aabb subset_boxes[treelet_subsets];
    const unsigned full = (1u << leaf_n) - 1u;
    for (unsigned s = 1; s <= full; ++s) {
      const unsigned lowest = s & (0u - s);
      subset_boxes[s] = (s == lowest) ? leaf_boxes[lowest_bit(s)] : merge(subset_boxes[s ^ lowest], leaf_boxes[lowest_bit(s)]);
      if ((s & (s - 1)) == 0) {
        opt[s] = leaf_costs[lowest_bit(s)];
        continue;
      }
      const float area = surface_area(subset_boxes[s]);
      const unsigned low = s & (0u - s);
      const unsigned rest = s ^ low;
      float best = 3.4e38f;
      unsigned best_part = low;
      // Proper subsets p of s containing the lowest leaf: each partition once.
      for (unsigned q = (rest - 1) & rest;; q = (q - 1) & rest) {
        const unsigned p = q | low;
        const float c = add_rn(opt[p], opt[s ^ p]);
        if (c < best) best = c, best_part = p;
        if (q == 0) break;
      }
      opt[s] = add_rn(mul_rn(cost.traversal_cost, area), best);  // no contraction: same as the warp path
      split[s] = std::uint8_t(best_part);
    }
    const float current = bvh_load(&cost.costs[root]);
    // Rebuild only for a real gain: rounding must not churn equal-cost topologies.
    if (!(opt[full] < current * (1.0f - 1e-6f))) return;

    // Rebuild top-down; internal node slots are reused in the order they were collected.
    unsigned set_stack[treelet_leaves];
    std::uint32_t node_stack[treelet_leaves];
    int top = 0, next_internal = 1;
    set_stack[top] = full;
    node_stack[top++] = root;
    while (top > 0) {
      --top;
      const unsigned s = set_stack[top];
      const std::uint32_t x = node_stack[top];
      const unsigned parts[2] = {split[s], s ^ unsigned(split[s])};
      std::uint32_t child[2];
      for (int c = 0; c < 2; ++c) {
        if ((parts[c] & (parts[c] - 1)) == 0) {
          child[c] = leaves[lowest_bit(parts[c])];
        } else {
          child[c] = internals[next_internal++];
          set_stack[top] = parts[c];
          node_stack[top++] = child[c];
        }
        parents[child[c]] = x;
      }
      bvh_node out;
      out.box = subset_boxes[s];
      out.left_or_first = child[0];
      out.right_or_count = child[1];
      nodes[x] = out;
      cost.costs[x] = opt[s];
      std::uint32_t size = 0;
      for (int k = 0; k < leaf_n; ++k)
        if (s & (1u << k)) size += leaf_sizes[k];
      cost.sizes[x] = size;
    }
  }

  CANOPY_HD static int lowest_bit(unsigned s) {
    int k = 0;
    while (!(s & (1u << k))) ++k;
    return k;
  }
};

}  // namespace detail
}  // namespace canopy
