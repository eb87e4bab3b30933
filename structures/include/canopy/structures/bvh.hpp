// canopy/structures/bvh.hpp — per-frame bounding volume hierarchies over triangles, boxes or points.
//
// [SECTION] node layout and view     what kernels and apps read
// [SECTION] build options            Morton width, quality step, SAH constants
// [SECTION] bvh_builder              build / refit, keeps its memory from frame to frame
// [SECTION] drawing helper           node boxes by depth for viewers
//
// The builder is an LBVH (Lauterbach et al. 2009, hierarchy after Karras 2012) followed by an
// optional quality step, treelet restructuring (Karras & Aila 2013), which brings the SAH cost close
// to that of a binned-SAH build (see binned_sah.hpp for the reference and docs/bvh.md for numbers).
// On CUDA the restructuring runs one warp per treelet and gives the same trees as the host path.
// It is written once over canopy's primitives and canopy::for_each and runs on both backends.
//
// Stages (names recorded with a stage_timer when one is passed):
//   morton     primitive boxes, centroid bounds, Morton codes
//   sort       radix sort of (code, primitive index) pairs
//   hierarchy  Karras radix tree: internal nodes, parents, leaves
//   bounds     boxes bottom-up with one atomic counter per internal node
//   optimize   treelet restructuring rounds (when enabled)
//   refit      (refit_* only) leaf boxes from moved geometry, then boxes bottom-up
//
// Invalid primitives: a primitive with a NaN or ±inf coordinate is excluded, not refused. It keeps
// its leaf (every primitive is in exactly one leaf) but gets an empty box, sorts last, does not
// enlarge any ancestor's box, and is never reported by a query. Their number is written to device
// memory each build (invalid_primitive_count()) and reported by statistics().
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/span.hpp>
#include <canopy/core/timer.hpp>
#include <canopy/structures/geometry.hpp>

#include <cstddef>
#include <cstdint>

namespace canopy {

// ---------------------------------------------------------------------------------------------
// [SECTION] node layout and view

//! Marks a leaf in bvh_node::right_or_count.
constexpr std::uint32_t bvh_leaf_flag = 0x80000000u;
//! Parent of the root.
constexpr std::uint32_t bvh_no_parent = 0xffffffffu;

//! One node, 32 bytes: box (24) + two words (8).
//!   internal node: left_or_first = left child, right_or_count = right child (< 2^31);
//!   leaf:          left_or_first = first entry in bvh_view::primitive_indices,
//!                  right_or_count = bvh_leaf_flag | number of primitives.
//! Node array layout of the LBVH with n >= 1 primitives: 2n - 1 nodes; internal nodes in
//! [0, n - 1), the root is node 0; leaf i (i-th primitive in Morton order) is node n - 1 + i and
//! holds primitive_indices[i], one primitive per leaf.
struct bvh_node {
  aabb box;
  std::uint32_t left_or_first;
  std::uint32_t right_or_count;
};
static_assert(sizeof(bvh_node) == 32, "bvh_node is 32 bytes");

CANOPY_HD inline bool is_leaf(const bvh_node& n) { return (n.right_or_count & bvh_leaf_flag) != 0; }
CANOPY_HD inline std::uint32_t leaf_count(const bvh_node& n) { return n.right_or_count & ~bvh_leaf_flag; }

//! Read-only view of a built hierarchy; trivially copyable, pass it to kernels by value.
//! Valid until the next build or refit of the builder that made it (or its destruction); lives in
//! the builder's context's memory space.
struct bvh_view {
  span<const bvh_node> nodes;                  //!< node_count() nodes; empty when no primitives
  span<const std::uint32_t> primitive_indices; //!< leaf entries -> input primitive index
  span<const std::uint32_t> parents;           //!< parent of each node; bvh_no_parent for the root
  std::uint32_t root = 0;                      //!< root node index (meaningful when !empty())

  CANOPY_HD bool empty() const { return nodes.size() == 0; }
};

// ---------------------------------------------------------------------------------------------
// [SECTION] build options

//! What quality step runs after the LBVH hierarchy.
enum class bvh_quality : std::uint8_t {
  none,     //!< plain LBVH: fastest build, SAH cost typically 15-35% above binned SAH
  treelet,  //!< treelet restructuring (Karras & Aila 2013): rounds of optimal treelets of up to 7 leaves
};

struct bvh_build_options {
  int morton_bits = 30;                      //!< 30 (u32 sort, faster) or 63 (u64 sort, finer)
  bvh_quality quality = bvh_quality::treelet; //!< quality step after the hierarchy
  int treelet_rounds = 1;                    //!< restructuring rounds (each one bottom-up pass)
  int treelet_leaves = 5;                    //!< leaves per treelet, 3..7: DP work grows ~3^leaves
  int treelet_min_primitives = 16;           //!< round r only restructures nodes with >= this * 2^r primitives beneath
  // Measured on an H200 (docs/bvh.md, CUDA path: a warp per treelet): the defaults (5 / 1 / 16)
  // build 1M triangles in 0.82 ms, sort included, SAH 1.075x binned SAH (bunny 1.096x, 10M 1.081x).
  // For quality over speed: leaves 7, rounds 2 give 1.050x in 2.9 ms at 1M. Changing from
  // 7 / 2 / 16 to 5 / 1 / 16 was a default change: every option stays accepted.
  float traversal_cost = 1.0f;               //!< SAH cost of visiting an internal node (C_t)
  float intersection_cost = 1.0f;            //!< SAH cost of testing one primitive (C_i)
};

//! Facts about a built tree. Computed on the host from a copy of the nodes: synchronises.
struct bvh_statistics {
  std::size_t primitive_count = 0;   //!< primitives the tree was built over
  std::size_t invalid_primitives = 0;//!< primitives excluded for NaN/inf coordinates
  std::size_t node_count = 0;
  std::size_t leaf_count = 0;
  std::size_t max_depth = 0;         //!< edges from the root to the deepest leaf
  double average_leaf_depth = 0;
  //! SAH cost: (C_t * sum of internal areas + C_i * sum over leaves of area * count) / root area.
  double sah_cost = 0;
};

//! SAH cost of a node array (any layout that follows bvh_node's encoding), on the host.
double bvh_sah_cost(const bvh_node* nodes, std::size_t node_count, std::uint32_t root, float traversal_cost,
                    float intersection_cost);

// ---------------------------------------------------------------------------------------------
// [SECTION] bvh_builder

//! Builds and refits a BVH on a context's backend. Keeps every buffer from frame to frame: after
//! the first build of a given primitive count (or a larger one), builds and refits allocate
//! nothing, and on CUDA they enqueue work on ctx.stream() without synchronising.
//!
//! Complexity: O(n) work per stage plus the radix sort; treelet restructuring does about
//! 3^leaves operations per restructured node (on CUDA shared by the 32 lanes of a warp).
//! Memory: about 100 bytes per primitive (nodes 64, parents 8, keys/indices/temporaries; the
//! CUDA quality step adds 2 bytes of per-node start flags), held until the builder dies or
//! clear() is called.
//! Not thread-safe; one builder per stream.
class bvh_builder {
 public:
  //! Throws invalid_argument for options out of range (morton_bits not 30 or 63, negative rounds).
  explicit bvh_builder(context& ctx, bvh_build_options options = {});
  ~bvh_builder();
  bvh_builder(const bvh_builder&) = delete;
  bvh_builder& operator=(const bvh_builder&) = delete;

  //! Triangles: indices holds 3 vertex indices per triangle (size a multiple of 3, each index <
  //! vertices.size(); out-of-range indices make a triangle invalid, like NaN coordinates).
  //! Spans must be in ctx's memory space and stay valid until the stream reaches the build.
  void build_triangles(span<const vec3> vertices, span<const std::uint32_t> indices, stage_timer* timer = nullptr);
  //! One primitive per box. A box with lo > hi on some axis or a non-finite coordinate is invalid.
  void build_boxes(span<const aabb> boxes, stage_timer* timer = nullptr);
  //! One primitive per point (for knn()).
  void build_points(span<const vec3> points, stage_timer* timer = nullptr);

  //! Recomputes every box for moved vertices, keeping the topology of the last build_triangles()
  //! (same triangle count and indices). Quality degrades as the mesh deforms away from the
  //! build-time shape; rebuild when it matters. Stage "refit".
  void refit_triangles(span<const vec3> vertices, span<const std::uint32_t> indices, stage_timer* timer = nullptr);
  //! Same for boxes and points of the last build_boxes() / build_points().
  void refit_boxes(span<const aabb> boxes, stage_timer* timer = nullptr);
  void refit_points(span<const vec3> points, stage_timer* timer = nullptr);

  //! The current tree (empty before the first build or after building over 0 primitives).
  bvh_view view() const;
  std::size_t node_count() const { return node_count_; }
  std::size_t primitive_count() const { return primitive_count_; }
  //! One u32 in ctx's space: how many primitives the last build or refit excluded as invalid.
  span<const std::uint32_t> invalid_primitive_count() const;
  //! Depth, leaves and SAH cost; copies the tree to the host (synchronises; not per frame).
  bvh_statistics statistics() const;
  const bvh_build_options& options() const { return options_; }
  context& ctx() const { return *ctx_; }
  //! Gives every buffer back to the context's resource.
  void clear();

 private:
  enum class kind : std::uint8_t { none, triangles, boxes, points };
  template <class Source>
  void build(const Source& source, std::size_t n, stage_timer* timer);
  template <class Source>
  void refit(const Source& source, std::size_t n, stage_timer* timer);
  void prepare(std::size_t n);

  context* ctx_;
  bvh_build_options options_;
  kind kind_ = kind::none;
  std::size_t primitive_count_ = 0;
  std::size_t node_count_ = 0;
  buffer<bvh_node> nodes_;
  buffer<std::uint32_t> parents_;
  buffer<std::uint32_t> primitive_indices_;  // sorted primitive ids (values of the sort)
  buffer<std::uint32_t> index_scratch_;      // sort's value ping-pong / unsorted ids
  buffer<std::uint64_t> codes64_;            // 63-bit codes (or 30-bit codes widened)
  buffer<std::uint32_t> codes32_;
  buffer<aabb> primitive_boxes_;             // per input primitive
  buffer<aabb> centroid_boxes_;              // per input primitive: centroid as a point box (reduce input)
  buffer<std::uint32_t> counters_;           // per internal node, for the bottom-up passes
  buffer<float> node_costs_;                 // per node SAH cost of its subtree (optimize)
  buffer<std::uint32_t> subtree_sizes_;      // per node primitive count (optimize)
  buffer<std::uint8_t> treelet_starts_;      // per node, CUDA optimize: where a round's climbs start
  buffer<aabb> centroid_bounds_;             // one box
  buffer<std::uint32_t> invalid_count_;      // one u32
};

// ---------------------------------------------------------------------------------------------
// [SECTION] drawing helper

//! Writes, for every node whose depth (root = 0) lies in [min_depth, max_depth], its box and
//! depth to out_boxes / out_depths (in no particular order), and the number of such nodes to
//! count[0]. When that number exceeds out_boxes.size(), only out_boxes.size() of them are written
//! and count[0] still says how many there were. Stream-ordered, no synchronisation; count must be
//! in ctx's space. O(nodes * depth) work.
void bvh_node_boxes(context& ctx, const bvh_view& bvh, std::uint32_t min_depth, std::uint32_t max_depth,
                    span<aabb> out_boxes, span<std::uint32_t> out_depths, span<std::uint32_t> count);

}  // namespace canopy
