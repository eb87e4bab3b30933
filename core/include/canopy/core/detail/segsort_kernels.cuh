// canopy/core/detail/segsort_kernels.cuh — kernels of segmented_sort on CUDA.
//
// Segments are binned by size into lists (one thread per segment, warp-aggregated atomics); each
// bin has a kernel whose group of G threads x I items sorts one segment of at most G*I keys with
// group_sort (detail/merge_kernels.cuh). Segments larger than a block's tile are sorted by one
// block each: tiles sorted in place, then merge-path passes through a temporary copy.
// Compiled only by nvcc.
#pragma once

#include <canopy/core/detail/merge_kernels.cuh>

#include <cstddef>
#include <cstdint>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy::detail {

//! Number of size bins; the last holds segments larger than one block's tile.
constexpr int segsort_bins = 6;

//! Bin bounds: bin b holds segments of size in (upper[b - 1], upper[b]] (upper[-1] = 1); sizes 0
//! and 1 need no work and go nowhere.
struct segsort_bin_bounds {
  std::uint32_t upper[segsort_bins];
  std::size_t list_base[segsort_bins];  //!< where bin b's list starts in `lists`
};

//! Segment s clamped to [0, n]: [b, max(b, e)).
__device__ __forceinline__ void segment_bounds(const std::uint32_t* offsets, std::size_t s, std::size_t n,
                                               std::size_t& b, std::size_t& e) {
  b = offsets[s] < n ? offsets[s] : n;
  const std::size_t raw_end = offsets[s + 1] < n ? offsets[s + 1] : n;
  e = raw_end > b ? raw_end : b;
}

//! Appends every segment of size > upper[0] to its bin's list (bin 0, the tiny segments, is sorted
//! straight from the offsets and needs no list). counters[0..bins) count the lists;
//! counters[bins] receives the smallest s with offsets[s + 1] < offsets[s] and counters[bins + 1]
//! the last offset when it passes n (both start at UINT32_MAX). List slots are reserved per block
//! (one global atomic per block and bin) so that millions of segments do not serialise on a
//! counter. A template so that every translation unit including this header may define it.
template <int BlockThreads>
__global__ void __launch_bounds__(BlockThreads)
    segsort_bin_kernel(const std::uint32_t* offsets, std::size_t segments, std::size_t n, segsort_bin_bounds bounds,
                       std::uint32_t* lists, std::uint32_t* counters) {
  __shared__ std::uint32_t block_count[segsort_bins];
  __shared__ std::uint32_t block_first[segsort_bins];
  const std::size_t s = std::size_t(blockIdx.x) * BlockThreads + threadIdx.x;
  const unsigned lane = threadIdx.x & 31;
  if (threadIdx.x < segsort_bins) block_count[threadIdx.x] = 0;
  int bin = -1;
  if (s < segments) {
    const std::uint32_t o0 = offsets[s], o1 = offsets[s + 1];
    if (o1 < o0) atomicMin(&counters[segsort_bins], std::uint32_t(s));
    if (s + 1 == segments && o1 > n) counters[segsort_bins + 1] = o1;
    std::size_t b, e;
    segment_bounds(offsets, s, n, b, e);
    const std::size_t size = e - b;
    if (size > bounds.upper[0]) {
      bin = segsort_bins - 1;
      for (int i = segsort_bins - 2; i >= 1; --i)
        if (size <= bounds.upper[i]) bin = i;
    }
  }
  __syncthreads();
  std::uint32_t rank = 0;  // slot of this segment among its block's segments of the same bin
#pragma unroll
  for (int i = 1; i < segsort_bins; ++i) {
    const unsigned members = __ballot_sync(0xffffffffu, bin == i);
    if (members == 0) continue;
    const int leader = __ffs(members) - 1;
    std::uint32_t first = 0;
    if (int(lane) == leader) first = atomicAdd(&block_count[i], std::uint32_t(__popc(members)));
    first = __shfl_sync(0xffffffffu, first, leader);
    if (bin == i) rank = first + __popc(members & ((1u << lane) - 1u));
  }
  __syncthreads();
  if (threadIdx.x < segsort_bins && block_count[threadIdx.x] != 0)
    block_first[threadIdx.x] = atomicAdd(&counters[threadIdx.x], block_count[threadIdx.x]);
  __syncthreads();
  if (bin > 0) lists[bounds.list_base[bin] + block_first[bin] + rank] = std::uint32_t(s);
}

//! Sorts segments with one group of G threads per segment (G*I >= the bin's sizes). Listed: group
//! id indexes the bin's list, whose length is *list_count. Not listed (the tiny bin): group id is
//! the segment, and the group sorts it only when its size is in [2, G*I]; consecutive groups then
//! read consecutive memory.
template <class Key, class Value, bool HasValues, int G, int I, int BlockThreads, bool Listed, class Comp>
__global__ void __launch_bounds__(BlockThreads)
    segsort_group_kernel(Key* keys, Value* values, std::size_t n, const std::uint32_t* offsets,
                         std::size_t segments, const std::uint32_t* list, const std::uint32_t* list_count,
                         Comp comp) {
  __shared__ group_storage<Key, Value, HasValues, BlockThreads * I> s;
  const int group = int(threadIdx.x) / G;
  const int lane = int(threadIdx.x) % G;
  const std::size_t id = std::size_t(blockIdx.x) * (BlockThreads / G) + group;
  std::size_t b, e;
  if constexpr (Listed) {
    if (id >= *list_count) return;  // whole groups leave together
    segment_bounds(offsets, list[id], n, b, e);
  } else {
    if (id >= segments) return;
    segment_bounds(offsets, id, n, b, e);
    if (e - b < 2 || e - b > std::size_t(G * I)) return;
  }
  const int count = int(e - b);
  const group_sync<G, BlockThreads> sync(threadIdx.x);
  Key* sk = s.keys + group * (G * I);
  Value* sv = s.values + (HasValues ? group * (G * I) : 0);
  Key k[I];
  Value v[I];
  load_blocked<Key, G, I>(keys + b, count, sk, lane, k, sync);
  if constexpr (HasValues) load_blocked<Value, G, I>(values + b, count, sv, lane, v, sync);
  group_sort<Key, Value, HasValues, G, I>(k, v, sk, sv, count, lane, comp, sync);
  store_blocked<Key, G, I>(keys + b, count, sk, lane, k, sync);
  if constexpr (HasValues) store_blocked<Value, G, I>(values + b, count, sv, lane, v, sync);
}

//! Sorts each segment of the last bin with one block: tiles of Threads*Items keys in place, then
//! merge passes between the segment and its place in tmp; the result ends in keys/values.
template <class Key, class Value, bool HasValues, int Threads, int Items, class Comp>
__global__ void __launch_bounds__(Threads)
    segsort_large_kernel(Key* keys, Value* values, Key* tmp_k, Value* tmp_v, std::size_t n,
                         const std::uint32_t* offsets, const std::uint32_t* list, const std::uint32_t* list_count,
                         Comp comp) {
  constexpr int tile = Threads * Items;
  __shared__ group_storage<Key, Value, HasValues, tile> s;
  __shared__ std::size_t split[2];
  if (blockIdx.x >= *list_count) return;
  std::size_t b, e;
  segment_bounds(offsets, list[blockIdx.x], n, b, e);
  const std::size_t m = e - b;
  const group_sync<Threads, Threads> sync(threadIdx.x);
  for (std::size_t c = 0; c < m; c += tile) {
    const int count = int(m - c < std::size_t(tile) ? m - c : std::size_t(tile));
    Key k[Items];
    Value v[Items];
    sync();
    load_blocked<Key, Threads, Items>(keys + b + c, count, s.keys, threadIdx.x, k, sync);
    if constexpr (HasValues) load_blocked<Value, Threads, Items>(values + b + c, count, s.values, threadIdx.x, v, sync);
    group_sort<Key, Value, HasValues, Threads, Items>(k, v, s.keys, s.values, count, threadIdx.x, comp, sync);
    store_blocked<Key, Threads, Items>(keys + b + c, count, s.keys, threadIdx.x, k, sync);
    if constexpr (HasValues) store_blocked<Value, Threads, Items>(values + b + c, count, s.values, threadIdx.x, v, sync);
  }
  Key* src_k = keys + b;
  Key* dst_k = tmp_k + b;
  Value* src_v = HasValues ? values + b : values;
  Value* dst_v = HasValues ? tmp_v + b : tmp_v;
  for (std::size_t w = tile; w < m; w *= 2) {
    for (std::size_t p0 = 0; p0 < m; p0 += tile) {
      const std::size_t p1 = p0 + tile < m ? p0 + tile : m;
      const std::size_t pair_start = p0 / (2 * w) * (2 * w);
      sync();
      if (threadIdx.x < 2) split[threadIdx.x] = merge_split_at(src_k, m, w, pair_start, threadIdx.x ? p1 : p0, comp);
      sync();
      merge_tile<Key, Value, HasValues, Threads, Items>(src_k, src_v, dst_k, dst_v, m, w, p0, p1, split[0], split[1],
                                                        s, comp);
    }
    Key* tk = src_k;
    src_k = dst_k;
    dst_k = tk;
    Value* tv = src_v;
    src_v = dst_v;
    dst_v = tv;
  }
  if (src_k != keys + b) {
    sync();
    for (std::size_t i = threadIdx.x; i < m; i += Threads) {
      keys[b + i] = src_k[i];
      if constexpr (HasValues) values[b + i] = src_v[i];
    }
  }
}

}  // namespace canopy::detail

#endif  // CANOPY_HAS_CUDA && __CUDACC__
