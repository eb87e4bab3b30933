// canopy/structures/bvh_queries.hpp — rays, box overlaps and nearest neighbours against a bvh_view.
//
// [SECTION] per-ray traversal (CANOPY_HD; call from your own kernels, e.g. a camera)
// [SECTION] batched queries   (dispatch on the context's backend)
//
// Ray-triangle tests are Möller–Trumbore (geometry.hpp: intersect_triangle), not watertight.
// Traversal is depth-first with a per-thread stack of bvh_max_stack entries, nearer child first.
// Closest hits are deterministic: the smallest t wins, and equal t goes to the smaller primitive
// index, so the result equals brute force over intersect_triangle() (see geometry.hpp for the one
// rounding caveat of the slab test).
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/structures/bvh.hpp>
#include <canopy/structures/geometry.hpp>

#include <cstdint>

namespace canopy {

// ---------------------------------------------------------------------------------------------
// [SECTION] per-ray traversal

//! Traversal stack entries. The LBVH depth is bounded by Morton bits + log2(n) (< 95) and the
//! treelet step adds little; statistics().max_depth must stay below this for traversal to be exact.
constexpr int bvh_max_stack = 128;

//! Visits, depth first, every leaf whose box the ray segment [r.tmin, tmax] meets, calling
//! leaf(primitive_index, tmax) for each of its primitives; the callback may shrink tmax (closest
//! hit) and returns true to stop the traversal (any hit). Near child first.
template <class LeafFn>
CANOPY_HD inline void bvh_traverse_ray(const bvh_view& bvh, const ray& r, float& tmax, LeafFn&& leaf) {
  if (bvh.empty()) return;
  const ray_inverse inv = make_ray_inverse(r);
  std::uint32_t stack[bvh_max_stack];
  int top = 0;
  std::uint32_t node = bvh.root;
  float t_entry;
  if (!intersect_aabb(bvh.nodes[node].box, r, inv, tmax, t_entry)) return;
  for (;;) {
    const bvh_node& n = bvh.nodes[node];
    if (is_leaf(n)) {
      const std::uint32_t first = n.left_or_first, count = leaf_count(n);
      for (std::uint32_t k = 0; k < count; ++k)
        if (leaf(bvh.primitive_indices[first + k], tmax)) return;
    } else {
      const std::uint32_t a = n.left_or_first, b = n.right_or_count;
      float ta, tb;
      const bool hit_a = intersect_aabb(bvh.nodes[a].box, r, inv, tmax, ta);
      const bool hit_b = intersect_aabb(bvh.nodes[b].box, r, inv, tmax, tb);
      if (hit_a && hit_b) {
        const bool a_first = ta <= tb;
        if (top < bvh_max_stack) stack[top++] = a_first ? b : a;
        node = a_first ? a : b;
        continue;
      }
      if (hit_a) { node = a; continue; }
      if (hit_b) { node = b; continue; }
    }
    // Pop, skipping entries whose box the shrunk segment no longer reaches.
    for (;;) {
      if (top == 0) return;
      node = stack[--top];
      if (intersect_aabb(bvh.nodes[node].box, r, inv, tmax, t_entry)) break;
    }
  }
}

//! Vertices of triangle `prim`; false (the triangle is skipped) when an index is out of range.
CANOPY_HD inline bool fetch_triangle(span<const vec3> vertices, span<const std::uint32_t> indices, std::uint32_t prim,
                                     vec3& a, vec3& b, vec3& c) {
  const std::size_t base = 3 * std::size_t(prim);
  if (base + 2 >= indices.size()) return false;
  const std::uint32_t ia = indices[base], ib = indices[base + 1], ic = indices[base + 2];
  const std::size_t nv = vertices.size();
  if (ia >= nv || ib >= nv || ic >= nv) return false;
  a = vertices[ia];
  b = vertices[ib];
  c = vertices[ic];
  return true;
}

//! Closest hit of r over every triangle, with no tree: the oracle that tests and benchmarks compare
//! traversal with. Same intersection test and tie rule (smaller t, then smaller primitive id) as
//! bvh_trace_closest, so the two agree exactly. O(triangles) per ray.
CANOPY_HD inline hit closest_hit_brute_force(span<const vec3> vertices, span<const std::uint32_t> indices, const ray& r) {
  hit best = miss_hit();
  const std::uint32_t triangles = std::uint32_t(indices.size() / 3);
  for (std::uint32_t prim = 0; prim < triangles; ++prim) {
    vec3 a, b, c;
    float t, u, v;
    if (fetch_triangle(vertices, indices, prim, a, b, c) && intersect_triangle(r, a, b, c, r.tmax, t, u, v) &&
        (t < best.t || (t == best.t && prim < best.primitive)))
      best = hit{t, prim, u, v};
  }
  return best;
}

//! Closest hit of r among the triangles (vertices, indices: 3 per triangle) the tree was built over.
CANOPY_HD inline hit bvh_trace_closest(const bvh_view& bvh, span<const vec3> vertices,
                                       span<const std::uint32_t> indices, const ray& r) {
  hit best = miss_hit();
  float tmax = r.tmax;
  bvh_traverse_ray(bvh, r, tmax, [&](std::uint32_t prim, float& t_limit) {
    vec3 a, b, c;
    float t, u, v;
    if (fetch_triangle(vertices, indices, prim, a, b, c) && intersect_triangle(r, a, b, c, t_limit, t, u, v) &&
        (t < best.t || (t == best.t && prim < best.primitive))) {
      best = hit{t, prim, u, v};
      t_limit = t;
    }
    return false;
  });
  return best;
}

//! True when any triangle meets r's segment [tmin, tmax] (shadow rays); stops at the first hit.
CANOPY_HD inline bool bvh_trace_any(const bvh_view& bvh, span<const vec3> vertices, span<const std::uint32_t> indices,
                                    const ray& r) {
  bool found = false;
  float tmax = r.tmax;
  bvh_traverse_ray(bvh, r, tmax, [&](std::uint32_t prim, float& t_limit) {
    vec3 a, b, c;
    float t, u, v;
    found = fetch_triangle(vertices, indices, prim, a, b, c) && intersect_triangle(r, a, b, c, t_limit, t, u, v);
    return found;
  });
  return found;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] batched queries

//! hits[i] = closest hit of rays[i] (miss: t = +inf, primitive = no_hit). All spans in ctx's space;
//! vertices/indices must be those the tree was built (or last refitted) over. Stream-ordered.
void trace_closest(context& ctx, const bvh_view& bvh, span<const vec3> vertices, span<const std::uint32_t> indices,
                   span<const ray> rays, span<hit> hits);
//! occluded[i] = 1 when rays[i] hits any triangle within [tmin, tmax], else 0. Stream-ordered.
void trace_any(context& ctx, const bvh_view& bvh, span<const vec3> vertices, span<const std::uint32_t> indices,
               span<const ray> rays, span<std::uint8_t> occluded);

//! One overlapping pair: query index and primitive index of the tree.
struct overlap_pair {
  std::uint32_t query;
  std::uint32_t primitive;
};

//! Every (i, j) with overlaps(queries[i], box of primitive j), found by traversing a tree built with
//! build_boxes(). With `self` set (queries are the very boxes the tree was built over) each
//! unordered pair of distinct boxes is reported once, as query < primitive. Two passes over the
//! queries: count, exclusive scan, fill; `out` is resized to the exact total. Counts, offsets
//! and the total are 64-bit, so totals of 2^32 pairs and more are exact (8 bytes each: 32 GiB of
//! output); a total whose bytes size_t cannot hold is refused (invalid_argument naming 'out').
//! Order: by query, then in traversal order. Synchronises once to learn the total.
//! Returns the number of pairs. Temporary memory: 8 bytes per query.
std::size_t overlap_pairs(context& ctx, const bvh_view& bvh, span<const aabb> queries, buffer<overlap_pair>& out,
                          bool self = false);

//! Largest k knn() accepts.
constexpr int knn_max_k = 32;

//! For each query q, the k points nearest to it (squared Euclidean distance), nearest first; equal
//! distances are ordered by point index, so the result equals brute force exactly. The tree must
//! come from build_points(points). out_indices/out_dist2 hold k entries per query (row q at q * k);
//! when fewer than k points exist the rest is no_hit / +inf. 1 <= k <= knn_max_k. Stream-ordered.
void knn(context& ctx, const bvh_view& bvh, span<const vec3> points, span<const vec3> queries, int k,
         span<std::uint32_t> out_indices, span<float> out_dist2);

}  // namespace canopy
