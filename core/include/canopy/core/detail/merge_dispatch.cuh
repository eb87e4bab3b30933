// canopy/core/detail/merge_dispatch.cuh — launch sequence and tuning of merge_sort on CUDA.
// Compiled only by nvcc.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/merge_kernels.cuh>

#include <cstddef>
#include <utility>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy::detail {

//! Odd value <= x (x >= 1).
constexpr int merge_odd_floor(int x) { return x < 1 ? 1 : (x % 2 ? x : x - 1); }

//! One launch configuration of merge sort (template arguments of merge_sort_cuda; the sweep in
//! bench/tuning/merge_tuning.cu instantiates others):
//!   SortThreads x Items   items per tile-sort block (the sorted runs the merge passes start from);
//!   MergeThreads x Items  outputs per merge-pass block (SortThreads is a multiple of MergeThreads);
//!   PartitionWays         probes per step of the split search (2: binary; merge_path_wide);
//!   WarpStore             merge blocks store through store_blocked_by_warp (one barrier fewer);
//!   MergeMinBlocks        __launch_bounds__ minimum of resident merge blocks per SM (0: none given;
//!                         an explicit 1 lets ptxas use more registers: 56 instead of 48 for u32 keys);
//!   PdlBelowLog2          programmatic dependent launch of partition and merge kernels when
//!                         n < 2^PdlBelowLog2 (0: never);
//!   SampleLog2            > 0: the tile sort and every merge pass also write every 2^SampleLog2-th
//!                         output key to a sample index, which the next partition searches first
//!                         (merge_split_sampled); 2^SampleLog2 must divide the sorted tile;
//!   TileCode              merge_tile_code bits of the tile sort (0: group_sort for every tile);
//!   SortMinBlocks         __launch_bounds__ minimum of resident tile-sort blocks per SM (0: none).
template <int SortThreads, int MergeThreads, int Items, int PartitionWays, bool WarpStore, int MergeMinBlocks,
          int PdlBelowLog2, int SampleLog2 = 0, int TileCode = 0, int SortMinBlocks = 0>
struct merge_shape {
  static constexpr int sort_threads = SortThreads;
  static constexpr int merge_threads = MergeThreads;
  static constexpr int items = Items;
  static constexpr int partition_ways = PartitionWays;
  static constexpr bool warp_store = WarpStore;
  static constexpr int merge_min_blocks = MergeMinBlocks;
  static constexpr int pdl_below_log2 = PdlBelowLog2;
  static constexpr int sample_log2 = SampleLog2;
  static constexpr int tile_code = TileCode;
  static constexpr int sort_min_blocks = SortMinBlocks;
};

//! Threads per block and items per thread of merge sort. Items stay odd so that blocked shared
//! accesses at stride Items are free of bank conflicts (measured on H200, 2^26 u32 keys: 256 x 15
//! takes 3.4 ms, 256 x 16 takes 5.9 ms); a tile (threads * items items of key + value) of larger
//! records stays within 40 KiB of static shared memory (the 40960 below; the static limit is 48 KiB). Larger tiles mean fewer device-wide passes: 256 x 23 measured
//! best for the merge blocks of 4-byte keys. The tile sort of 4-byte keys (keys only) uses
//! 512 x 23 = 11776 items: one merge pass fewer than 5888-item tiles at 2^26 (13 instead of 14) and
//! 2^28 (15 instead of 16) for one more shared-memory merge round (measured 2^26: 3.146 -> 3.127 ms,
//! 2^28: 13.16 -> 13.02 ms; docs/performance/merge_sort.md).
//! Measured on H100 with u32 keys (docs/performance/merge_sort.md, runs 6-7; ms at 2^26 / 2^28):
//! - split search: binary through the sample index of every 256th key (sample_log2 = 8): 3.5122 /
//!   14.8464 against 3.5340 / 14.9126 without it; 4-way searches lost with and without the index
//!   (the partition is bound by scattered DRAM reads, not by their depth);
//! - merge blocks need 48 registers (5 blocks per SM): the warp store under __launch_bounds__(256,
//!   5) 3.5477 / 14.9096; the block store under an explicit minimum of 1 (56 registers) 3.6348 /
//!   15.2403, the warp store alone (56 registers) 3.6347 / 15.3801. The store path itself is
//!   worth nothing measurable (last pass alone: 0.1885 ms warp store at 48 registers, 0.1888 ms
//!   block store at 40); the block store without a minimum compiles to 48 registers as before;
//! - PDL below 2^27: with the final kernels PDL was faster at 2^24 (0.9067 vs 0.9327) and 2^26
//!   (3.4947 vs 3.5122) and slower at 2^28 (14.8749 vs 14.8464).
template <class Key, class Value, bool HasValues>
struct merge_sort_tuning {
  static constexpr int bytes = int(sizeof(Key) + (HasValues ? sizeof(Value) : 0));
  static constexpr int threads = 256;
  static constexpr int items = bytes <= 4    ? 23
                               : bytes <= 8  ? 11
                                             : merge_odd_floor(40960 / (threads * bytes) < 7 ? 40960 / (threads * bytes) : 7);
  static constexpr int sort_threads = bytes <= 4 ? 512 : threads;
  // Measured with keys-only u32 only. Other types run the same kernels as in the GPU tests of run
  // 7 (warp store and sample index, minimum of 1 block: 48 registers for u32 pairs), not yet timed.
  static constexpr int partition_ways = 2;
  static constexpr bool warp_store = true;
  static constexpr int merge_min_blocks = bytes <= 4 ? 5 : 1;
  static constexpr int pdl_below_log2 = 27;
  static constexpr int sample_log2 = 8;
  // Tile sort of 4-byte keys (keys only): full-tile path, per-warp load/store and the clamped
  // serial merge, bounded to 3 blocks per SM (40 registers, 112 B of spills): H100 run 9
  // (docs/performance/merge_sort.md), tile sort 2^26 0.894 -> 0.614 ms, 2^28 3.469 -> 2.355 ms;
  // whole sort 0.977 -> 1.059 x CUB at 2^26, 0.992 -> 1.061 x at 2^28 (best of the 9 variants timed;
  // the unspilled "all paths" variant at 3 blocks per SM: 1.040 / 1.045). Other records keep the
  // general path (not timed).
  static constexpr bool tuned_tile = !HasValues && sizeof(Key) == 4;
  static constexpr int tile_code = tuned_tile ? (tile_code_full | tile_code_warp_io | tile_code_clamped_merge) : 0;
  static constexpr int sort_min_blocks = tuned_tile ? 3 : 0;
  using shape = merge_shape<sort_threads, threads, items, partition_ways, warp_store, merge_min_blocks, pdl_below_log2,
                            sample_log2, tile_code, sort_min_blocks>;
};

//! The default hook of merge_sort_cuda: nothing. A hook is called after every launch with the
//! stage launched (0 tile sort, 1 partition, 2 merge pass); the tuning sweep records events there.
struct merge_no_hook {
  void operator()(int) const {}
};

//! Sorts n >= 2 items on ctx's stream: one tile-sort pass (SortThreads x Items items per tile), then
//! ceil(log2(sorted tiles)) merge passes (MergeThreads x Items outputs per block; SortThreads is a
//! multiple of MergeThreads, so no merge tile straddles two pairs of runs) ping-ponging with a
//! temporary copy, arranged so that the last pass writes into keys/values. Shape: a merge_shape.
//!
//! The partition and merge kernels are launched with programmatic dependent launch on sm_90+ below
//! 2^Shape::pdl_below_log2 items.
template <class Key, class Value, bool HasValues, class Shape = typename merge_sort_tuning<Key, Value, HasValues>::shape,
          class Comp, class Hook = merge_no_hook>
void merge_sort_cuda(context& ctx, Key* keys, Value* values, std::size_t n, Comp comp, Hook hook = {}) {
  constexpr int SortThreads = Shape::sort_threads;
  constexpr int MergeThreads = Shape::merge_threads;
  constexpr int Items = Shape::items;
  static_assert(SortThreads % MergeThreads == 0, "a sorted tile must be a whole number of merge tiles");
  constexpr std::size_t sort_tile = std::size_t(SortThreads) * Items;
  constexpr std::size_t tile = std::size_t(MergeThreads) * Items;
  constexpr int SampleLog2 = Shape::sample_log2;
  static_assert(SampleLog2 == 0 || sort_tile % (std::size_t(1) << SampleLog2) == 0,
                "the sample step must divide the sorted tile (so every run starts on a sample)");
  const std::size_t sort_tiles = (n + sort_tile - 1) / sort_tile;
  const std::size_t tiles = (n + tile - 1) / tile;
  const bool pdl = ctx.device().compute_capability_major >= 9 && Shape::pdl_below_log2 > 0 &&
                   n < (std::size_t(1) << Shape::pdl_below_log2);
  int passes = 0;
  for (std::size_t w = sort_tile; w < n; w *= 2) ++passes;
  buffer<Key> tmp_k(ctx, passes ? n : 0);
  buffer<Value> tmp_v(ctx, HasValues && passes ? n : 0);
  buffer<std::size_t> splits(ctx, passes ? tiles + 1 : 0);
  buffer<Key> samples(ctx, passes && SampleLog2 ? (n >> SampleLog2) + 1 : 0);
  Key* src_k = (passes % 2) ? tmp_k.data() : keys;
  Value* src_v = (passes % 2) ? tmp_v.data() : values;
  Key* dst_k = (passes % 2) ? keys : tmp_k.data();
  Value* dst_v = (passes % 2) ? values : tmp_v.data();
  cudaStream_t stream = ctx.stream();
  // The tile sort follows the caller's work, which need not signal a dependent launch: plain launch.
  // The sample index is only written when a merge pass will read it.
  Key* sample_ptr = samples.data();
  constexpr int SortMinBlocks = Shape::sort_min_blocks;
  constexpr int TileCode = Shape::tile_code;
  if (passes)
    launch_dependent(false,
                     merge_block_sort_kernel<Key, Value, HasValues, SortThreads, Items, SampleLog2, SortMinBlocks,
                                             TileCode, Comp>,
                     unsigned(sort_tiles), SortThreads, 0, stream, "launch of canopy::merge_sort (tile sort)",
                     static_cast<const Key*>(keys), static_cast<const Value*>(values), src_k, src_v, n, sample_ptr,
                     comp);
  else
    launch_dependent(false,
                     merge_block_sort_kernel<Key, Value, HasValues, SortThreads, Items, 0, SortMinBlocks, TileCode,
                                             Comp>,
                     unsigned(sort_tiles), SortThreads, 0, stream, "launch of canopy::merge_sort (tile sort)",
                     static_cast<const Key*>(keys), static_cast<const Value*>(values), src_k, src_v, n, sample_ptr,
                     comp);
  hook(0);
  for (std::size_t w = sort_tile; w < n; w *= 2) {
    const unsigned partition_blocks = unsigned((tiles + 1 + 255) / 256);
    launch_dependent(pdl, merge_partition_kernel<Key, Comp, Shape::partition_ways, SampleLog2>, partition_blocks,
                     256, 0, stream, "launch of canopy::merge_sort (partition)", static_cast<const Key*>(src_k), n,
                     w, tile, tiles, splits.data(), static_cast<const Key*>(sample_ptr), comp);
    hook(1);
    launch_dependent(pdl,
                     merge_pass_kernel<Key, Value, HasValues, MergeThreads, Items, Shape::warp_store,
                                       Shape::merge_min_blocks, SampleLog2, Comp>,
                     unsigned(tiles), MergeThreads, 0, stream, "launch of canopy::merge_sort (merge pass)",
                     static_cast<const Key*>(src_k), static_cast<const Value*>(src_v), dst_k, dst_v, n, w,
                     static_cast<const std::size_t*>(splits.data()), sample_ptr, comp);
    hook(2);
    std::swap(src_k, dst_k);
    std::swap(src_v, dst_v);
  }
}

}  // namespace canopy::detail

#endif  // CANOPY_HAS_CUDA && __CUDACC__
