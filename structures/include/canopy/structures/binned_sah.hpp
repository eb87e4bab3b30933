// canopy/structures/binned_sah.hpp — the quality reference: a host binned-SAH BVH builder.
//
// Top-down, 32 bins per axis over the centroid bounds, all three axes, the split of least SAH
// cost; a node whose centroids coincide splits in the middle by order. Recursion in parallel with
// oneTBB above 4096 primitives. It makes leaves of one primitive (like the LBVH), so that the two
// trees' SAH costs compare like for like. Not for per-frame use: it runs on the host only.
#pragma once

#include <canopy/structures/bvh.hpp>
#include <canopy/structures/scene.hpp>

#include <cstdint>
#include <vector>

namespace canopy {

struct binned_sah_options {
  int bins = 32;               //!< bins per axis, 2..256
  float traversal_cost = 1.0f; //!< C_t of the cost function
  float intersection_cost = 1.0f; //!< C_i
};

//! A tree in bvh_node's encoding, on the host.
struct host_bvh {
  std::vector<bvh_node> nodes;                 //!< root is node 0; 2n - 1 nodes for n >= 1
  std::vector<std::uint32_t> primitive_indices;
  double sah_cost(float traversal_cost = 1.0f, float intersection_cost = 1.0f) const;
  bvh_view view() const;                       //!< host-space view (parents left empty)
};

//! Builds over primitive boxes (empty/invalid boxes go to leaves like any other; their centroid is
//! treated as the origin). O(n log n).
host_bvh build_binned_sah(const std::vector<aabb>& boxes, const binned_sah_options& options = {});
//! Primitive boxes of a host mesh's triangles.
std::vector<aabb> triangle_boxes(const mesh& m);

}  // namespace canopy
