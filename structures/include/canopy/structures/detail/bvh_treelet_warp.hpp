// canopy/structures/detail/bvh_treelet_warp.hpp — CUDA-only: treelet restructuring with one warp
// per treelet (Karras & Aila 2013, section 4.2), the device path of restructure_treelets.
//
// Why: with one thread per treelet (restructure_treelets) the 2^7-subset DP runs ~1000 dependent
// iterations out of thread-local arrays (3.7 KB, spilled to L2 in warps where one lane works),
// and the nodes near the root wait for it level after level: 13 ms per round at 1M triangles on
// an H200. Here the 32 lanes of a warp share each treelet: formation with warp reductions,
// subset areas 4 per lane, the DP by subset size with one subset per lane (the full set split
// over lanes), all in shared memory, so a treelet costs ~70 dependent shared-memory steps.
//
// Same result as restructure_treelets, bit for bit: the same leaf picks (largest area, ties to
// the lowest slot), the same float expressions (mul_rn/add_rn, no contraction), the same
// tie-breaking of the DP (first strict minimum in restructure_treelets' enumeration order), and
// the same reuse of node slots. Bottom-up order does not change the result: a treelet is formed
// only when both subtrees beneath its root are final.
#pragma once

#include <canopy/core/config.hpp>
#include <canopy/core/error.hpp>
#include <canopy/core/for_each.hpp>
#include <canopy/structures/detail/bvh_build_kernels.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy {
namespace detail {

constexpr unsigned treelet_warp_block = 128;  // 4 warps; ~1.2 KB of shared memory per warp
constexpr unsigned treelet_full_mask = 0xffffffffu;

//! One warp's scratch for one treelet.
struct treelet_warp_scratch {
  aabb leaf_box[treelet_leaves];
  float leaf_cost[treelet_leaves];
  std::uint32_t leaf_size[treelet_leaves];
  std::uint32_t leaves[treelet_leaves];
  std::uint32_t internals[treelet_leaves - 1];
  float area[treelet_subsets];
  float opt[treelet_subsets];
  std::uint8_t split[treelet_subsets];
};

//! Restructures the treelet rooted at `root`; every lane of the warp calls it with the same root.
__device__ inline void warp_restructure_treelet(const restructure_treelets& p, std::uint32_t root,
                                                treelet_warp_scratch& sh, unsigned lane) {
  // Formation: lane k < leaf_n holds treelet leaf k (node index and node).
  const bvh_node r = bvh_load_node(&p.nodes[root]);
  std::uint32_t my_leaf = lane == 0 ? r.left_or_first : r.right_or_count;
  bvh_node my_node{};
  if (lane < 2) my_node = bvh_load_node(&p.nodes[my_leaf]);
  std::uint32_t my_internal = root;  // lane k < internal_n holds treelet internal node k
  int leaf_n = 2;
  while (leaf_n < p.max_leaves) {
    const bool candidate = int(lane) < leaf_n && !is_leaf(my_node);
    float a = candidate ? surface_area(my_node.box) : -1.0f;
    float best = a;
    for (int o = 16; o > 0; o >>= 1) best = fmaxf(best, __shfl_xor_sync(treelet_full_mask, best, o));
    const unsigned winners = __ballot_sync(treelet_full_mask, candidate && a == best);
    if (winners == 0) break;
    const int pick = __ffs(winners) - 1;  // lowest slot of the largest area, as on the host
    const std::uint32_t expanded = __shfl_sync(treelet_full_mask, my_leaf, pick);
    const std::uint32_t left = __shfl_sync(treelet_full_mask, my_node.left_or_first, pick);
    const std::uint32_t right = __shfl_sync(treelet_full_mask, my_node.right_or_count, pick);
    if (int(lane) == leaf_n - 1) my_internal = expanded;  // internals[internal_n], internal_n = leaf_n - 1
    if (int(lane) == pick) {
      my_leaf = left;
      my_node = bvh_load_node(&p.nodes[left]);
    } else if (int(lane) == leaf_n) {
      my_leaf = right;
      my_node = bvh_load_node(&p.nodes[right]);
    }
    ++leaf_n;
  }
  if (leaf_n < 3) return;  // two leaves: one topology only (warp-uniform)
  if (int(lane) < leaf_n) {
    sh.leaf_box[lane] = my_node.box;
    sh.leaf_cost[lane] = bvh_load(&p.cost.costs[my_leaf]);
    sh.leaf_size[lane] = bvh_load(&p.cost.sizes[my_leaf]);
    sh.leaves[lane] = my_leaf;
  }
  if (int(lane) < leaf_n - 1) sh.internals[lane] = my_internal;
  __syncwarp();

  // Areas of every subset (box = merge of its leaves' boxes: exact in any order).
  const unsigned full = (1u << leaf_n) - 1u;
  for (unsigned s = lane + 1; s <= full; s += 32) {
    aabb b = empty_aabb();
    for (int k = 0; k < leaf_n; ++k)
      if (s & (1u << k)) b = merge(b, sh.leaf_box[k]);
    sh.area[s] = surface_area(b);
    if ((s & (s - 1)) == 0) sh.opt[s] = sh.leaf_cost[__ffs(s) - 1];
  }
  __syncwarp();

  // DP by subset size; partitions enumerated exactly as restructure_treelets does.
  for (int size = 2; size < leaf_n; ++size) {
    for (unsigned s = lane + 1; s <= full; s += 32) {
      if (__popc(s) != size) continue;
      const unsigned low = s & (0u - s);
      const unsigned rest = s ^ low;
      float best = 3.4e38f;
      unsigned best_part = low;
      for (unsigned q = (rest - 1) & rest;; q = (q - 1) & rest) {
        const unsigned part = q | low;
        const float c = add_rn(sh.opt[part], sh.opt[s ^ part]);
        if (c < best) best = c, best_part = part;
        if (q == 0) break;
      }
      sh.opt[s] = add_rn(mul_rn(p.cost.traversal_cost, sh.area[s]), best);
      sh.split[s] = std::uint8_t(best_part);
    }
    __syncwarp();
  }
  // The full set: low = 1, rest = full ^ 1, q = t << 1 for t in [0, 2^(leaf_n-1) - 1), visited by
  // the host in decreasing q. Each lane keeps its first strict minimum in decreasing q; the
  // reduction keeps the smaller cost, and on equal cost the larger q (the one visited first).
  {
    const unsigned count = (1u << (leaf_n - 1)) - 1u;
    // Defaults as on the host: no strict improvement on 3.4e38 keeps the part {lowest leaf} (q = 0).
    float best = 3.4e38f;
    unsigned best_q = 0;
    for (int t = int(count) - 1 - int(lane); t >= 0; t -= 32) {
      const unsigned q = unsigned(t) << 1;
      const unsigned part = q | 1u;
      const float c = add_rn(sh.opt[part], sh.opt[full ^ part]);
      if (c < best) best = c, best_q = q;
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(treelet_full_mask, best, o);
      const unsigned oq = __shfl_xor_sync(treelet_full_mask, best_q, o);
      if (ob < best || (ob == best && oq > best_q)) best = ob, best_q = oq;
    }
    if (lane == 0) {
      sh.opt[full] = add_rn(mul_rn(p.cost.traversal_cost, sh.area[full]), best);
      sh.split[full] = std::uint8_t(best_q | 1u);
    }
  }
  __syncwarp();
  const float current = bvh_load(&p.cost.costs[root]);
  if (!(sh.opt[full] < current * (1.0f - 1e-6f))) return;  // warp-uniform: every lane reads the same

  // Rebuild top-down in lane 0, reusing internal slots in collection order (as on the host).
  if (lane == 0) {
    unsigned set_stack[treelet_leaves];
    std::uint32_t node_stack[treelet_leaves];
    int top = 0, next_internal = 1;
    set_stack[top] = full;
    node_stack[top++] = root;
    while (top > 0) {
      --top;
      const unsigned s = set_stack[top];
      const std::uint32_t x = node_stack[top];
      const unsigned parts[2] = {sh.split[s], s ^ unsigned(sh.split[s])};
      std::uint32_t child[2];
      for (int c = 0; c < 2; ++c) {
        if ((parts[c] & (parts[c] - 1)) == 0) {
          child[c] = sh.leaves[__ffs(parts[c]) - 1];
        } else {
          child[c] = sh.internals[next_internal++];
          set_stack[top] = parts[c];
          node_stack[top++] = child[c];
        }
        p.parents[child[c]] = x;
      }
      aabb b = empty_aabb();
      std::uint32_t size = 0;
      for (int k = 0; k < leaf_n; ++k)
        if (s & (1u << k)) b = merge(b, sh.leaf_box[k]), size += sh.leaf_size[k];
      bvh_node out;
      out.box = b;
      out.left_or_first = child[0];
      out.right_or_count = child[1];
      p.nodes[x] = out;
      p.cost.costs[x] = sh.opt[s];
      p.cost.sizes[x] = size;
    }
    __threadfence();  // published before any lane of this warp increments an ancestor's counter
  }
  __syncwarp();
}

//! Where the climbs of a round start: node j with fewer than min_size primitives beneath whose
//! parent has at least min_size (the frontier below which a round restructures nothing). Flags
//! are taken before the round starts: restructuring rewrites the sizes of treelet nodes.
struct mark_treelet_starts {
  span<const std::uint32_t> sizes;
  span<const std::uint32_t> parents;
  span<std::uint8_t> starts;
  std::uint32_t min_size;
  CANOPY_HD void operator()(std::size_t j) const {
    const std::uint32_t parent = parents[j];
    starts[j] = std::uint8_t(sizes[j] < min_size && parent != bvh_no_parent && sizes[parent] >= min_size);
  }
};

//! One thread per node; threads at frontier nodes (starts) climb as in restructure_treelets
//! (which starts at every leaf: the climb below the frontier only counts arrivals). A lane that
//! must restructure a node queues it, and the warp restructures its queued nodes one after
//! another, all lanes together. Lanes that stopped keep taking part in the warp's collective steps.
//! Every node of >= min_size primitives has two children that are each a frontier node or a node
//! of >= min_size, so its counter still sees exactly two arrivals.
__global__ void __launch_bounds__(treelet_warp_block)
    restructure_treelets_warp_kernel(restructure_treelets p, const std::uint8_t* starts, std::size_t node_count) {
  __shared__ treelet_warp_scratch scratch[treelet_warp_block / 32];
  const unsigned lane = threadIdx.x & 31u;
  treelet_warp_scratch& sh = scratch[threadIdx.x >> 5];
  const std::size_t j = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  bool alive = j < node_count && starts[j] != 0;
  std::uint32_t node = std::uint32_t(j);
  for (;;) {
    std::uint32_t pending = bvh_no_parent;
    while (alive) {
      const std::uint32_t parent = p.parents[node];
      if (parent == bvh_no_parent) {
        alive = false;
        break;
      }
      __threadfence();
      if (atomicAdd(&p.counters[parent], 1u) == 0) {
        alive = false;
        break;
      }
      node = parent;
      if (bvh_load(&p.cost.sizes[parent]) >= p.min_size) {
        pending = parent;
        break;
      }
    }
    unsigned queue = __ballot_sync(treelet_full_mask, pending != bvh_no_parent);
    if (queue == 0) return;  // every lane stopped
    while (queue) {
      const int leader = __ffs(queue) - 1;
      queue &= queue - 1;
      const std::uint32_t root = __shfl_sync(treelet_full_mask, pending, leader);
      warp_restructure_treelet(p, root, sh, lane);
    }
  }
}

//! One round: frontier flags into `starts` (2n - 1 bytes), then the climbs. counters must be zero.
inline void launch_restructure_treelets_warp(context& ctx, const restructure_treelets& p, span<std::uint8_t> starts) {
  if (p.n < 2) return;
  const std::size_t node_count = 2 * p.n - 1;
  for_each(ctx, node_count,
           mark_treelet_starts{span<const std::uint32_t>(p.cost.sizes, node_count, ctx.space()),
                               span<const std::uint32_t>(p.parents), starts, p.min_size});
  const std::size_t blocks = (node_count + treelet_warp_block - 1) / treelet_warp_block;
  restructure_treelets_warp_kernel<<<static_cast<unsigned>(blocks), treelet_warp_block, 0, ctx.stream()>>>(
      p, starts.data(), node_count);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::bvh_builder (treelet restructuring, warp per treelet)");
}

}  // namespace detail
}  // namespace canopy

#endif
