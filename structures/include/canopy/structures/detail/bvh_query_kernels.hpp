// canopy/structures/detail/bvh_query_kernels.hpp — per-query functors of the batched BVH queries.
//
// [SECTION] rays        closest and any hit, one thread per ray
// [SECTION] overlaps    box-box traversal, used twice: count pass, then fill pass at scanned offsets
// [SECTION] knn         bounded max-heap of k entries per query, ordered by (distance², index)
#pragma once

#include <canopy/core/context.hpp>
#include <canopy/core/span.hpp>
#include <canopy/structures/bvh_queries.hpp>

#include <cstdint>
#include <limits>

namespace canopy {
namespace detail {

// ---------------------------------------------------------------------------------------------
// [SECTION] rays

struct trace_closest_functor {
  bvh_view bvh;
  span<const vec3> vertices;
  span<const std::uint32_t> indices;
  span<const ray> rays;
  span<hit> hits;
  CANOPY_HD void operator()(std::size_t i) const { hits[i] = bvh_trace_closest(bvh, vertices, indices, rays[i]); }
};

struct trace_any_functor {
  bvh_view bvh;
  span<const vec3> vertices;
  span<const std::uint32_t> indices;
  span<const ray> rays;
  span<std::uint8_t> occluded;
  CANOPY_HD void operator()(std::size_t i) const {
    occluded[i] = bvh_trace_any(bvh, vertices, indices, rays[i]) ? 1 : 0;
  }
};

// ---------------------------------------------------------------------------------------------
// [SECTION] overlaps

//! Calls visit(primitive) for every primitive whose leaf box overlaps q (leaf boxes of a box tree
//! are the primitive boxes themselves, so no second test is needed).
template <class Visit>
CANOPY_HD inline void bvh_traverse_box(const bvh_view& bvh, const aabb& q, Visit&& visit) {
  if (bvh.empty() || !overlaps(bvh.nodes[bvh.root].box, q)) return;
  std::uint32_t stack[bvh_max_stack];
  int top = 0;
  stack[top++] = bvh.root;
  while (top > 0) {
    const bvh_node& n = bvh.nodes[stack[--top]];
    if (is_leaf(n)) {
      for (std::uint32_t k = 0; k < leaf_count(n); ++k) visit(bvh.primitive_indices[n.left_or_first + k]);
      continue;
    }
    const std::uint32_t a = n.left_or_first, b = n.right_or_count;
    if (overlaps(bvh.nodes[b].box, q) && top < bvh_max_stack) stack[top++] = b;
    if (overlaps(bvh.nodes[a].box, q) && top < bvh_max_stack) stack[top++] = a;
  }
}

//! Pass 1 (out null): counts[i] = pairs of query i. Pass 2: writes them at offsets[i].
//! Counts and offsets are 64-bit: one query meets fewer than 2^32 primitives, but the running
//! total over all queries can pass 2^32 (overlap_offsets_in_place).
struct overlap_functor {
  bvh_view bvh;
  span<const aabb> queries;
  bool self;
  span<std::uint64_t> counts;         // pass 1
  span<const std::uint64_t> offsets;  // pass 2
  overlap_pair* out;                  // pass 2
  CANOPY_HD void operator()(std::size_t i) const {
    const aabb q = queries[i];
    const std::uint32_t qi = std::uint32_t(i);
    // An invalid query box (NaN, inverted) overlaps nothing, like an invalid primitive.
    if (!is_finite(q.lo) || !is_finite(q.hi) || is_empty(q)) {
      if (!out) counts[i] = 0;
      return;
    }
    std::uint32_t found = 0;
    const std::uint64_t base = out ? offsets[i] : 0;
    bvh_traverse_box(bvh, q, [&](std::uint32_t prim) {
      if (self && prim <= qi) return;
      if (out) out[base + found] = overlap_pair{qi, prim};
      ++found;
    });
    if (!out) counts[i] = found;
  }
};

//! overlap_pairs' middle step, in place: counts (one entry per query and a last entry that is 0)
//! become exclusive offsets, and the last entry the total, which is returned. 64-bit throughout, so
//! totals of 2^32 pairs and more come out exact. Synchronises once to read the total.
std::uint64_t overlap_offsets_in_place(context& ctx, span<std::uint64_t> counts);

//! Element count of overlap_pairs' output for `total` pairs; refuses (invalid_argument naming
//! canopy::overlap_pairs and 'out') a total whose bytes size_t cannot hold.
std::size_t overlap_output_length(std::uint64_t total);

// ---------------------------------------------------------------------------------------------
// [SECTION] knn

struct knn_functor {
  bvh_view bvh;
  span<const vec3> points;
  span<const vec3> queries;
  int k;
  span<std::uint32_t> out_indices;
  span<float> out_dist2;

  // (d, i) before (e, j) in the result order.
  CANOPY_HD static bool before(float d, std::uint32_t i, float e, std::uint32_t j) { return d < e || (d == e && i < j); }

  CANOPY_HD void operator()(std::size_t qi) const {
    const vec3 q = queries[qi];
    float heap_d[knn_max_k];
    std::uint32_t heap_i[knn_max_k];
    int size = 0;
    // Max-heap on (d, i): heap[0] is the worst of the current k best.
    auto push = [&](float d, std::uint32_t idx) {
      if (size < k) {
        int c = size++;
        while (c > 0) {
          const int p = (c - 1) / 2;
          if (!before(heap_d[p], heap_i[p], d, idx)) break;
          heap_d[c] = heap_d[p], heap_i[c] = heap_i[p];
          c = p;
        }
        heap_d[c] = d, heap_i[c] = idx;
        return;
      }
      if (!before(d, idx, heap_d[0], heap_i[0])) return;
      int c = 0;
      for (;;) {
        int l = 2 * c + 1, r = l + 1, m = c;
        float md = d;
        std::uint32_t mi = idx;
        if (l < size && before(md, mi, heap_d[l], heap_i[l])) m = l, md = heap_d[l], mi = heap_i[l];
        if (r < size && before(md, mi, heap_d[r], heap_i[r])) m = r;
        if (m == c) break;
        heap_d[c] = heap_d[m], heap_i[c] = heap_i[m];
        c = m;
      }
      heap_d[c] = d, heap_i[c] = idx;
    };
    const bool query_ok = is_finite(q);
    if (query_ok && !bvh.empty()) {
      std::uint32_t stack[bvh_max_stack];
      int top = 0;
      stack[top++] = bvh.root;
      while (top > 0) {
        const std::uint32_t node = stack[--top];
        const bvh_node& n = bvh.nodes[node];
        // Prune only what is strictly farther than the current k-th: equal distances may still
        // win on the index.
        if (size == k && distance_squared(n.box, q) > heap_d[0]) continue;
        if (is_leaf(n)) {
          for (std::uint32_t j = 0; j < leaf_count(n); ++j) {
            const std::uint32_t idx = bvh.primitive_indices[n.left_or_first + j];
            const vec3 p = points[idx];
            if (!is_finite(p)) continue;
            push(distance_squared(p, q), idx);
          }
          continue;
        }
        const std::uint32_t a = n.left_or_first, b = n.right_or_count;
        const float da = distance_squared(bvh.nodes[a].box, q), db = distance_squared(bvh.nodes[b].box, q);
        // Push the farther child first so the nearer one is visited next.
        const std::uint32_t near_child = da <= db ? a : b, far_child = da <= db ? b : a;
        if (top + 2 <= bvh_max_stack) {
          stack[top++] = far_child;
          stack[top++] = near_child;
        }
      }
    }
    // Heap to ascending order (insertion sort, k <= 32).
    for (int a = 1; a < size; ++a) {
      const float d = heap_d[a];
      const std::uint32_t idx = heap_i[a];
      int b = a - 1;
      while (b >= 0 && before(d, idx, heap_d[b], heap_i[b])) {
        heap_d[b + 1] = heap_d[b], heap_i[b + 1] = heap_i[b];
        --b;
      }
      heap_d[b + 1] = d, heap_i[b + 1] = idx;
    }
    const std::size_t row = qi * std::size_t(k);
    for (int j = 0; j < k; ++j) {
      out_indices[row + j] = j < size ? heap_i[j] : no_hit;
      out_dist2[row + j] = j < size ? heap_d[j] : std::numeric_limits<float>::infinity();
    }
  }
};

}  // namespace detail
}  // namespace canopy
