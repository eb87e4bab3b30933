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

//! Threads per block and items per thread of merge sort. Items stay odd so that blocked shared
//! accesses at stride Items are free of bank conflicts (measured on H200, 2^26 u32 keys: 256 x 15
//! takes 3.4 ms, 256 x 16 takes 5.9 ms); the tile (Threads*Items items of key + value) stays under
//! 40 KiB of static shared memory. Larger tiles mean fewer device-wide passes: 256 x 23 measured
//! best for 4-byte keys (docs/performance/merge_sort.md).
template <class Key, class Value, bool HasValues>
struct merge_sort_tuning {
  static constexpr int bytes = int(sizeof(Key) + (HasValues ? sizeof(Value) : 0));
  static constexpr int threads = 256;
  static constexpr int items = bytes <= 4    ? 23
                               : bytes <= 8  ? 11
                                             : merge_odd_floor(40960 / (threads * bytes) < 7 ? 40960 / (threads * bytes) : 7);
};

//! Sorts n >= 2 items on ctx's stream: one tile-sort pass, then ceil(log2(tiles)) merge passes
//! ping-ponging with a temporary copy, arranged so that the last pass writes into keys/values.
template <class Key, class Value, bool HasValues, int Threads = merge_sort_tuning<Key, Value, HasValues>::threads,
          int Items = merge_sort_tuning<Key, Value, HasValues>::items, class Comp>
void merge_sort_cuda(context& ctx, Key* keys, Value* values, std::size_t n, Comp comp) {
  constexpr std::size_t tile = std::size_t(Threads) * Items;
  const std::size_t tiles = (n + tile - 1) / tile;
  int passes = 0;
  for (std::size_t w = tile; w < n; w *= 2) ++passes;
  buffer<Key> tmp_k(ctx, passes ? n : 0);
  buffer<Value> tmp_v(ctx, HasValues && passes ? n : 0);
  buffer<std::size_t> splits(ctx, passes ? tiles + 1 : 0);
  Key* src_k = (passes % 2) ? tmp_k.data() : keys;
  Value* src_v = (passes % 2) ? tmp_v.data() : values;
  Key* dst_k = (passes % 2) ? keys : tmp_k.data();
  Value* dst_v = (passes % 2) ? values : tmp_v.data();
  cudaStream_t stream = ctx.stream();
  merge_block_sort_kernel<Key, Value, HasValues, Threads, Items>
      <<<unsigned(tiles), Threads, 0, stream>>>(keys, values, src_k, src_v, n, comp);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::merge_sort (tile sort)");
  for (std::size_t w = tile; w < n; w *= 2) {
    const unsigned partition_blocks = unsigned((tiles + 1 + 255) / 256);
    merge_partition_kernel<<<partition_blocks, 256, 0, stream>>>(src_k, n, w, tile, tiles, splits.data(), comp);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::merge_sort (partition)");
    merge_pass_kernel<Key, Value, HasValues, Threads, Items>
        <<<unsigned(tiles), Threads, 0, stream>>>(src_k, src_v, dst_k, dst_v, n, w, splits.data(), comp);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::merge_sort (merge pass)");
    std::swap(src_k, dst_k);
    std::swap(src_v, dst_v);
  }
}

}  // namespace canopy::detail

#endif  // CANOPY_HAS_CUDA && __CUDACC__
