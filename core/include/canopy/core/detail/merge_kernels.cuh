// canopy/core/detail/merge_kernels.cuh — device building blocks of merge sort and segmented sort.
//
// A "group" is G consecutive threads (G a power of two <= 32, or the whole block) that sort up to
// G * I items together:
//   1. items are loaded striped (coalesced) into shared memory and read back blocked: thread t
//      holds items [t*I, t*I + I). I is odd, so the blocked reads and writes at stride I hit 32
//      distinct banks for 4-byte words: the shared-memory layout has no bank conflicts there;
//   2. each thread sorts its I items in registers with an odd-even transposition network (it only
//      swaps adjacent items that are strictly out of order, so it is stable);
//   3. log2(G) rounds merge neighbouring runs in shared memory: each thread finds where its I
//      outputs start by merge path (binary search on the cross diagonal) and merges serially.
// block_sort_full runs the same steps on a full tile without count guards, with the options of
// merge_tile_code (per-warp load/store, named barriers per pair of runs, clamped serial merge).
// Device-wide merge passes (merge_pass_kernel, with splits from merge_partition_kernel) use the same
// merge-path split between tiles.
// Compiled only by nvcc (included from merge_dispatch.cuh / segsort_dispatch.cuh).
#pragma once

#include <canopy/core/config.hpp>
#include <canopy/core/detail/dependent_launch.cuh>
#include <canopy/core/detail/named_barrier.cuh>

#include <cstddef>
#include <cstdint>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy::detail {

//! Number of items to take from `a` among the first `diag` outputs of the stable merge of a and b
//! (ties go to a). O(log min(diag, a_len)) comparisons.
template <class Index, class Key, class Comp>
__device__ __forceinline__ Index merge_path(const Key* a, Index a_len, const Key* b, Index b_len, Index diag, Comp comp) {
  Index lo = diag > b_len ? diag - b_len : Index(0);
  Index hi = diag < a_len ? diag : a_len;
  while (lo < hi) {
    const Index mid = (lo + hi) >> 1;
    if (comp(b[diag - 1 - mid], a[mid])) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

//! merge_path for global memory: each step probes Ways - 1 evenly spaced diagonal positions whose
//! loads are independent, so a search over L candidates waits for about log_Ways(L) dependent
//! memory round trips instead of log2(L), for (Ways - 1) / log2(Ways) times the loads (the binary
//! search takes over once fewer than Ways candidates remain). Same result as merge_path; with a
//! comparator that is no strict weak order (NaN) it still returns a value in [lo, hi].
template <int Ways, class Index, class Key, class Comp>
__device__ __forceinline__ Index merge_path_wide(const Key* a, Index a_len, const Key* b, Index b_len, Index diag,
                                                 Comp comp) {
  Index lo = diag > b_len ? diag - b_len : Index(0);
  Index hi = diag < a_len ? diag : a_len;
  if constexpr (Ways > 2) {
    while (hi - lo >= Index(Ways)) {
      const Index step = (hi - lo) / Index(Ways);
      Key ka[Ways - 1], kb[Ways - 1];
#pragma unroll
      for (int i = 0; i < Ways - 1; ++i) {
        const Index m = lo + Index(i + 1) * step;
        ka[i] = a[m];
        kb[i] = b[diag - 1 - m];
      }
      // The answer is the first candidate m where comp(b[diag - 1 - m], a[m]) holds: it lies after
      // every probe before the first that holds, and at or before that one. Probes past the first
      // that holds are ignored, so the new range is never empty and always shrinks.
      Index new_lo = lo, new_hi = hi;
      bool found = false;
#pragma unroll
      for (int i = 0; i < Ways - 1; ++i) {
        const Index m = lo + Index(i + 1) * step;
        const bool take = comp(kb[i], ka[i]);
        if (!found && take) new_hi = m;
        if (!found && !take) new_lo = m + 1;
        found = found || take;
      }
      lo = new_lo;
      hi = new_hi;
    }
  }
  while (lo < hi) {
    const Index mid = (lo + hi) >> 1;
    if (comp(b[diag - 1 - mid], a[mid])) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

//! Synchronises a group of G threads: the block when G == BlockThreads, else G lanes of a warp.
template <int G, int BlockThreads>
struct group_sync {
  unsigned mask;
  __device__ __forceinline__ explicit group_sync(int thread) {
    if constexpr (G >= 32) {
      mask = 0xffffffffu;
    } else {
      mask = ((1u << G) - 1u) << ((thread & 31) & ~(G - 1));
    }
  }
  __device__ __forceinline__ void operator()() const {
    if constexpr (G == BlockThreads) __syncthreads();
    else __syncwarp(mask);
  }
};

//! Stable sort of I register items: odd-even transposition (I rounds of compare-exchanges of
//! neighbours, which swap only when strictly out of order).
template <class Key, class Value, bool HasValues, int I, class Comp>
__device__ __forceinline__ void odd_even_network(Key (&k)[I], Value (&v)[I], Comp comp) {
#pragma unroll
  for (int round = 0; round < I; ++round) {
#pragma unroll
    for (int j = round & 1; j + 1 < I; j += 2) {
      if (comp(k[j + 1], k[j])) {
        const Key tk = k[j];
        k[j] = k[j + 1];
        k[j + 1] = tk;
        if constexpr (HasValues) {
          const Value tv = v[j];
          v[j] = v[j + 1];
          v[j + 1] = tv;
        }
      }
    }
  }
}

//! Stable sort of the first `valid` of I register items; the rest are filled with copies of the
//! largest valid item, which a stable network leaves behind the valid ones.
template <class Key, class Value, bool HasValues, int I, class Comp>
__device__ __forceinline__ void thread_sort(Key (&k)[I], Value (&v)[I], int valid, Comp comp) {
  if (valid < I) {
    Key top = k[0];
#pragma unroll
    for (int i = 1; i < I; ++i)
      if (i < valid && comp(top, k[i])) top = k[i];
#pragma unroll
    for (int i = 0; i < I; ++i)
      if (i >= valid) k[i] = top;
  }
  odd_even_network<Key, Value, HasValues, I>(k, v, comp);
}

//! Serially merges from shared runs a[ai, a_end) and b[bi, b_end) (indices into one shared array
//! `s`) into I register items; idx[i] receives the shared index of output i. Ties go to a.
template <class Key, int I, class Comp>
__device__ __forceinline__ void serial_merge(const Key* s, int ai, int a_end, int bi, int b_end, Key (&k)[I],
                                             int (&idx)[I], Comp comp) {
  // An exhausted run's head is never used; it is read from inside the pair's own range (never
  // empty: b_end > the pair's start) so that a warp-only merge round reads no other warp's items.
  Key ka = s[ai < a_end ? ai : b_end - 1];
  Key kb = s[bi < b_end ? bi : b_end - 1];
#pragma unroll
  for (int i = 0; i < I; ++i) {
    const bool take_b = bi < b_end && (ai >= a_end || comp(kb, ka));
    k[i] = take_b ? kb : ka;
    idx[i] = take_b ? bi : ai;
    if (take_b) {
      ++bi;
      if (bi < b_end) kb = s[bi];
    } else {
      ++ai;
      if (ai < a_end) ka = s[ai];
    }
  }
}

//! serial_merge with one unconditional shared load per output: the next head of the run just taken
//! is read at min(index, b_end - 1), so an exhausted run's head is read from inside the pair (and
//! never used) instead of being skipped behind a second bounds check.
template <class Key, int I, class Comp>
__device__ __forceinline__ void serial_merge_clamped(const Key* s, int ai, int a_end, int bi, int b_end, Key (&k)[I],
                                                     int (&idx)[I], Comp comp) {
  const int last = b_end - 1;
  Key ka = s[min(ai, last)];
  Key kb = s[min(bi, last)];
#pragma unroll
  for (int i = 0; i < I; ++i) {
    const bool take_b = bi < b_end && (ai >= a_end || comp(kb, ka));
    k[i] = take_b ? kb : ka;
    idx[i] = take_b ? bi : ai;
    if (i + 1 < I) {
      bi += take_b ? 1 : 0;
      ai += take_b ? 0 : 1;
      const Key x = s[min(take_b ? bi : ai, last)];
      kb = take_b ? x : kb;
      ka = take_b ? ka : x;
    }
  }
}

//! Loads `count` items (<= G*I) from global memory, striped through shared memory, into blocked
//! registers of the group's thread `lane`.
template <class T, int G, int I, class Sync>
__device__ __forceinline__ void load_blocked(const T* g, int count, T* s, int lane, T (&r)[I], Sync sync) {
  T tmp[I];
#pragma unroll
  for (int i = 0; i < I; ++i) {
    const int j = lane + i * G;
    if (j < count) tmp[i] = g[j];
  }
#pragma unroll
  for (int i = 0; i < I; ++i) {
    const int j = lane + i * G;
    if (j < count) s[j] = tmp[i];
  }
  sync();
#pragma unroll
  for (int i = 0; i < I; ++i) {
    const int j = lane * I + i;
    if (j < count) r[i] = s[j];
  }
}

//! Stores blocked registers of `count` items to global memory, through shared memory so that the
//! global writes are striped (coalesced).
template <class T, int G, int I, class Sync>
__device__ __forceinline__ void store_blocked(T* g, int count, T* s, int lane, const T (&r)[I], Sync sync) {
  sync();
#pragma unroll
  for (int i = 0; i < I; ++i) {
    const int j = lane * I + i;
    if (j < count) s[j] = r[i];
  }
  sync();
#pragma unroll
  for (int i = 0; i < I; ++i) {
    const int j = lane + i * G;
    if (j < count) g[j] = s[j];
  }
}

//! Loads a full tile into blocked registers (thread t gets items [t*I, t*I + I)), each warp its own
//! 32*I consecutive items: coalesced global reads (32 consecutive items per instruction) into the
//! warp's own part of `s`, a warp barrier, blocked reads at stride I (odd: no bank conflicts). No
//! block barrier: the caller must know that no other warp uses that part of `s`.
template <class T, int I>
__device__ __forceinline__ void load_blocked_by_warp(const T* g, T* s, T (&r)[I]) {
  const int warp_base = int(threadIdx.x & ~31u) * I;
  const int lane = int(threadIdx.x & 31u);
  T tmp[I];
#pragma unroll
  for (int i = 0; i < I; ++i) tmp[i] = g[warp_base + lane + i * 32];
#pragma unroll
  for (int i = 0; i < I; ++i) s[warp_base + lane + i * 32] = tmp[i];
  __syncwarp();
#pragma unroll
  for (int i = 0; i < I; ++i) r[i] = s[int(threadIdx.x) * I + i];
}

//! Stores a block's blocked register items (thread t holds items [t*I, t*I + I), count <= Threads*I)
//! to global memory coalesced, through shared memory: each warp writes its 32*I items to its own
//! part of `s` (blocked, stride I: no bank conflicts), and after a warp barrier stores them striped,
//! 32 consecutive items per instruction. One block barrier first (every thread may still be reading
//! `s`), none after: the block-striped store_blocked needs two. SampleLog2 > 0: item j (global
//! position first + j) also goes to samples[(first + j) >> SampleLog2] when that position is a
//! multiple of 2^SampleLog2.
template <class T, int Threads, int I, int SampleLog2 = 0>
__device__ __forceinline__ void store_blocked_by_warp(T* g, int count, T* s, const T (&r)[I], std::size_t first = 0,
                                                      T* samples = nullptr) {
  __syncthreads();
  const int base = int(threadIdx.x) * I;
#pragma unroll
  for (int i = 0; i < I; ++i)
    if (base + i < count) s[base + i] = r[i];
  __syncwarp();
  const int warp_base = int(threadIdx.x & ~31u) * I;
  const int lane = int(threadIdx.x & 31u);
#pragma unroll
  for (int i = 0; i < I; ++i) {
    const int j = warp_base + lane + i * 32;
    if (j < count) {
      const T x = s[j];
      g[j] = x;
      if constexpr (SampleLog2 > 0) {
        if (((first + std::size_t(j)) & ((std::size_t(1) << SampleLog2) - 1)) == 0)
          samples[(first + std::size_t(j)) >> SampleLog2] = x;
      }
    }
  }
}

//! Sorts the group's `count` blocked register items (count <= G*I), stably; the result is blocked
//! in registers. sk/sv: the group's shared arrays of G*I items. All G threads must call it.
template <class Key, class Value, bool HasValues, int G, int I, class Comp, class Sync>
__device__ __forceinline__ void group_sort(Key (&k)[I], Value (&v)[I], Key* sk, Value* sv, int count, int lane,
                                           Comp comp, Sync sync) {
  const int start = lane * I;
  const int valid = count - start < 0 ? 0 : (count - start > I ? I : count - start);
  if (valid > 0) thread_sort<Key, Value, HasValues, I>(k, v, valid, comp);
  for (int width = I; width < count; width *= 2) {
    // While a pair of runs (2 * width items) lies within 32 threads, the round only exchanges data
    // inside a warp, and a warp barrier is enough.
    const bool warp_round = G > 32 && 2 * width <= 32 * I;
    if (warp_round) __syncwarp();
    else sync();
#pragma unroll
    for (int i = 0; i < I; ++i) {
      if (i < valid) {
        sk[start + i] = k[i];
        if constexpr (HasValues) sv[start + i] = v[i];
      }
    }
    if (warp_round) __syncwarp();
    else sync();
    if (valid > 0) {
      const int pair_start = start / (2 * width) * (2 * width);
      const int a_end = min(pair_start + width, count);
      const int b_end = min(pair_start + 2 * width, count);
      const int diag = start - pair_start;
      const int split = merge_path<int>(sk + pair_start, a_end - pair_start, sk + a_end, b_end - a_end, diag, comp);
      int idx[I];
      serial_merge<Key, I>(sk, pair_start + split, a_end, a_end + diag - split, b_end, k, idx, comp);
      if constexpr (HasValues) {
#pragma unroll
        for (int i = 0; i < I; ++i)
          if (i < valid) v[i] = sv[idx[i]];
      }
    }
  }
}

//! Shared memory of a group of Items items: keys, and values when HasValues.
template <class Key, class Value, bool HasValues, int Items>
struct group_storage {
  Key keys[Items];
  Value values[HasValues ? Items : 1];
};

//! Code paths of merge_block_sort_kernel (bits of its TileCode); 0 sorts every tile with group_sort.
enum merge_tile_code : int {
  //! Full tiles (all but the last) sort with block_sort_full: no per-item count guards.
  tile_code_full = 1,
  //! Full tiles load through load_blocked_by_warp and store through store_blocked_by_warp: one
  //! block barrier for the load and store instead of three.
  tile_code_warp_io = 2,
  //! A block-level merge round waits only for the warps that merge its pair of runs (a named
  //! barrier per pair) instead of the whole block.
  tile_code_group_barriers = 4,
  //! Rounds merge with serial_merge_clamped (one unconditional shared load per output).
  tile_code_clamped_merge = 8,
};

//! Barrier of a merge round in which each pair of runs is merged by `group` consecutive threads (a
//! power of two): a warp barrier while group <= 32; the block barrier when group == Threads or
//! without GroupBarriers; else a named barrier per group of group/32 warps. Ids: the W/2 groups of
//! 2 warps take 1..W/2, the W/4 groups of 4 warps the next W/4, and so on (W = Threads/32 warps,
//! W - 2 ids in all, so W <= 16). Any thread may wait only for threads whose shared items it reads
//! or overwrites: a round's pair is written and read only by the threads that merge it, and those
//! of the round before merged the halves of the same range.
template <int Threads, bool GroupBarriers>
__device__ __forceinline__ void merge_round_sync(int group) {
  if (group <= 32) {
    __syncwarp();
  } else if (!GroupBarriers || group >= Threads) {
    __syncthreads();
  } else {
    constexpr int W = Threads / 32;
    static_assert(W <= 16, "named barriers 1..15 cover the groups of at most 16 warps");
    const int g = group >> 5;  // warps per group
    named_barrier(1 + W - 2 * W / g + int(threadIdx.x >> 5) / g, group);
  }
}

//! Stable sort of a full tile of Threads*I items (Threads a power of two) held blocked in registers
//! (thread t holds items [t*I, t*I + I)); the result is blocked in registers. The same network and
//! merge rounds as group_sort, without its count guards; sk/sv hold Threads*I items.
template <class Key, class Value, bool HasValues, int Threads, int I, int Code, class Comp>
__device__ __forceinline__ void block_sort_full(Key (&k)[I], Value (&v)[I], Key* sk, Value* sv, Comp comp) {
  static_assert((Threads & (Threads - 1)) == 0, "block_sort_full needs a power-of-two block");
  constexpr bool GroupBarriers = (Code & tile_code_group_barriers) != 0;
  const int t = int(threadIdx.x);
  odd_even_network<Key, Value, HasValues, I>(k, v, comp);
#pragma unroll 1
  for (int group = 2; group <= Threads; group *= 2) {
    const int width = (group >> 1) * I;  // items per run
    merge_round_sync<Threads, GroupBarriers>(group);
#pragma unroll
    for (int i = 0; i < I; ++i) {
      sk[t * I + i] = k[i];
      if constexpr (HasValues) sv[t * I + i] = v[i];
    }
    merge_round_sync<Threads, GroupBarriers>(group);
    const int pair_start = (t & ~(group - 1)) * I;
    const int a_end = pair_start + width;
    const int diag = (t & (group - 1)) * I;
    const int split = merge_path<int>(sk + pair_start, width, sk + a_end, width, diag, comp);
    int idx[I];
    if constexpr ((Code & tile_code_clamped_merge) != 0)
      serial_merge_clamped<Key, I>(sk, pair_start + split, a_end, a_end + diag - split, a_end + width, k, idx, comp);
    else
      serial_merge<Key, I>(sk, pair_start + split, a_end, a_end + diag - split, a_end + width, k, idx, comp);
    if constexpr (HasValues) {
#pragma unroll
      for (int i = 0; i < I; ++i) v[i] = sv[idx[i]];
    }
  }
}

//! Sorts tiles of Threads*Items items of `in` into `out` (in may equal out: a block reads its whole
//! tile before it writes). SampleLog2 > 0: also writes samples[q >> SampleLog2] = out[q] for every
//! output position q that is a multiple of 2^SampleLog2 (the sample index merge_split_sampled
//! searches first). MinBlocks: resident blocks per SM asked of the register allocator (0: none).
//! Code: merge_tile_code bits; the last, partial tile always takes the general group_sort path.
template <class Key, class Value, bool HasValues, int Threads, int Items, int SampleLog2, int MinBlocks, int Code,
          class Comp>
__global__ void __launch_bounds__(Threads, MinBlocks)
    merge_block_sort_kernel(const Key* in_k, const Value* in_v, Key* out_k, Value* out_v, std::size_t n,
                            Key* samples, Comp comp) {
  dependent_launch_trigger_and_wait();
  constexpr int tile = Threads * Items;
  __shared__ group_storage<Key, Value, HasValues, tile> s;
  const std::size_t base = std::size_t(blockIdx.x) * tile;
  const int count = int(n - base < std::size_t(tile) ? n - base : std::size_t(tile));
  const group_sync<Threads, Threads> sync(threadIdx.x);
  Key k[Items];
  Value v[Items];
  if constexpr ((Code & tile_code_full) != 0) {
    if (count == tile) {  // the same for the whole block
      if constexpr ((Code & tile_code_warp_io) != 0) {
        load_blocked_by_warp<Key, Items>(in_k + base, s.keys, k);
        if constexpr (HasValues) load_blocked_by_warp<Value, Items>(in_v + base, s.values, v);
      } else {
        load_blocked<Key, Threads, Items>(in_k + base, tile, s.keys, threadIdx.x, k, sync);
        if constexpr (HasValues) load_blocked<Value, Threads, Items>(in_v + base, tile, s.values, threadIdx.x, v, sync);
      }
      block_sort_full<Key, Value, HasValues, Threads, Items, Code>(k, v, s.keys, s.values, comp);
      if constexpr ((Code & tile_code_warp_io) != 0) {
        store_blocked_by_warp<Key, Threads, Items, SampleLog2>(out_k + base, tile, s.keys, k, base, samples);
        if constexpr (HasValues) store_blocked_by_warp<Value, Threads, Items>(out_v + base, tile, s.values, v);
        return;
      } else {
        store_blocked<Key, Threads, Items>(out_k + base, tile, s.keys, threadIdx.x, k, sync);
        if constexpr (SampleLog2 > 0) {
          for (int q = int(threadIdx.x) << SampleLog2; q < tile; q += Threads << SampleLog2)
            samples[(base + std::size_t(q)) >> SampleLog2] = s.keys[q];
        }
        if constexpr (HasValues) store_blocked<Value, Threads, Items>(out_v + base, tile, s.values, threadIdx.x, v, sync);
        return;
      }
    }
  }
  load_blocked<Key, Threads, Items>(in_k + base, count, s.keys, threadIdx.x, k, sync);
  if constexpr (HasValues) {
    load_blocked<Value, Threads, Items>(in_v + base, count, s.values, threadIdx.x, v, sync);
  }
  group_sort<Key, Value, HasValues, Threads, Items>(k, v, s.keys, s.values, count, threadIdx.x, comp, sync);
  store_blocked<Key, Threads, Items>(out_k + base, count, s.keys, threadIdx.x, k, sync);
  if constexpr (SampleLog2 > 0) {
    // s.keys holds the sorted tile in output order (store_blocked's last barrier is behind all
    // writes, and nothing writes s.keys after it).
    constexpr std::size_t step = std::size_t(1) << SampleLog2;
    const std::size_t first = (base + step - 1) >> SampleLog2;
    for (std::size_t q = first + threadIdx.x; (q << SampleLog2) < base + std::size_t(count); q += Threads)
      samples[q] = s.keys[(q << SampleLog2) - base];
  }
  if constexpr (HasValues) store_blocked<Value, Threads, Items>(out_v + base, count, s.values, threadIdx.x, v, sync);
}

//! For merge pass `width` (runs [j*2w, j*2w+w) and [j*2w+w, j*2w+2w) are merged), the number of
//! items taken from the first run of its pair before output position p, as an absolute index.
//! Ways > 2 searches with merge_path_wide.
template <class Key, class Comp, int Ways = 2>
__device__ __forceinline__ std::size_t merge_split_at(const Key* in, std::size_t n, std::size_t width,
                                                      std::size_t pair_start, std::size_t p, Comp comp) {
  const std::size_t a_end = pair_start + width < n ? pair_start + width : n;
  const std::size_t b_end = pair_start + 2 * width < n ? pair_start + 2 * width : n;
  return pair_start + merge_path_wide<Ways, std::size_t>(in + pair_start, a_end - pair_start, in + a_end,
                                                         b_end - a_end, p - pair_start, comp);
}

//! merge_split_at with a sample index: samples[i] = in[i << SampleLog2] (2^SampleLog2 = S divides
//! `width`, so both runs of a pair start on a sample). A merge path over the two runs' samples (a
//! small array that stays in L2) estimates the split x to within 2S (the rank of a sampled key in
//! either run is known to within S); two probes check the window [x - 2S, x + 2S] (the predicate
//! of merge_path must be false just below it and true at its end), and the search finishes in that
//! window: about 2 log2(4S) scattered DRAM reads per split instead of 2 log2(width). A window that
//! fails the check (which a strict weak order cannot cause) falls back to the whole range.
template <class Key, class Comp, int Ways, int SampleLog2>
__device__ __forceinline__ std::size_t merge_split_sampled(const Key* in, const Key* samples, std::size_t n,
                                                           std::size_t width, std::size_t pair_start, std::size_t p,
                                                           Comp comp) {
  constexpr std::size_t S = std::size_t(1) << SampleLog2;
  const std::size_t a_end = pair_start + width < n ? pair_start + width : n;
  const std::size_t b_end = pair_start + 2 * width < n ? pair_start + 2 * width : n;
  const std::size_t la = a_end - pair_start, lb = b_end - a_end, d = p - pair_start;
  const Key* a = in + pair_start;
  const Key* b = in + a_end;
  std::size_t lo = d > lb ? d - lb : 0;
  std::size_t hi = d < la ? d : la;
  if (hi - lo > 4 * S) {
    const std::size_t xs = merge_path<std::size_t>(samples + (pair_start >> SampleLog2), (la + S - 1) >> SampleLog2,
                                                   samples + (a_end >> SampleLog2), (lb + S - 1) >> SampleLog2,
                                                   d >> SampleLog2, comp);
    const std::size_t x = xs << SampleLog2;
    const std::size_t wlo = x > lo + 2 * S ? x - 2 * S : lo;
    const std::size_t whi = x + 2 * S < hi ? x + 2 * S : hi;
    // merge_path's predicate at m is comp(b[d - 1 - m], a[m]); the answer is its first true m.
    bool ok = wlo <= whi;
    if (wlo > lo && ok) ok = !comp(b[d - wlo], a[wlo - 1]);
    if (whi < hi && ok) ok = comp(b[d - 1 - whi], a[whi]);
    if (ok) {
      lo = wlo;
      hi = whi;
    }
  }
  // The search over candidates [lo, hi] only: a from lo on, the diagonal moved by lo.
  return pair_start + lo + merge_path_wide<Ways, std::size_t>(a + lo, hi - lo, b, lb, d - lo, comp);
}

//! splits[j] = merge_split_at(position min(j*tile, n)) for j in [0, tiles]; one thread per split,
//! searching Ways-ary (merge_path_wide), through the sample index when SampleLog2 > 0.
template <class Key, class Comp, int Ways = 2, int SampleLog2 = 0>
__global__ void merge_partition_kernel(const Key* in, std::size_t n, std::size_t width, std::size_t tile,
                                       std::size_t tiles, std::size_t* splits, const Key* samples, Comp comp) {
  dependent_launch_trigger_and_wait();
  const std::size_t j = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j > tiles) return;
  const std::size_t p = j * tile < n ? j * tile : n;
  // At a pair boundary this is the split of the pair that starts there (0 items); the merge
  // kernel takes the end of the previous pair from the run lengths instead.
  const std::size_t pair_start = p / (2 * width) * (2 * width);
  if constexpr (SampleLog2 > 0) splits[j] = merge_split_sampled<Key, Comp, Ways, SampleLog2>(in, samples, n, width,
                                                                                           pair_start, p, comp);
  else splits[j] = merge_split_at<Key, Comp, Ways>(in, n, width, pair_start, p, comp);
}

//! Merges output tile [p0, p1) of a merge pass (both ends inside one pair of runs) given the
//! absolute split a0, a1 into the pair's first run at p0 and p1. WarpStore: the merged tile goes out
//! through store_blocked_by_warp (one block barrier fewer) instead of store_blocked. SampleLog2 > 0:
//! also writes the sample index of the output (samples[q >> SampleLog2] = out[q], as in
//! merge_block_sort_kernel).
template <class Key, class Value, bool HasValues, int Threads, int Items, bool WarpStore = false, int SampleLog2 = 0,
          class Comp>
__device__ __forceinline__ void merge_tile(const Key* in_k, const Value* in_v, Key* out_k, Value* out_v,
                                           std::size_t n, std::size_t width, std::size_t p0, std::size_t p1,
                                           std::size_t a0, std::size_t a1,
                                           group_storage<Key, Value, HasValues, Threads * Items>& s, Comp comp,
                                           Key* samples = nullptr) {
  const group_sync<Threads, Threads> sync(threadIdx.x);
  const std::size_t pair_start = p0 / (2 * width) * (2 * width);
  const std::size_t a_end = pair_start + width < n ? pair_start + width : n;
  const int count = int(p1 - p0);
  // With a strict weak ordering a0 <= a1 <= a0 + count; the clamps only keep a broken comparator
  // (NaN under <) from reading outside the input.
  if (a1 < a0) a1 = a0;
  if (a1 - a0 > std::size_t(count)) a1 = a0 + count;
  const std::size_t b0 = a_end + (p0 - pair_start) - (a0 - pair_start);
  const int a_len = int(a1 - a0);
  const std::size_t last = n - 1;
  // Both pieces side by side in shared memory: A at [0, a_len), B at [a_len, count).
  {
    Key tmp[Items];
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const int j = threadIdx.x + i * Threads;
      if (j < count) tmp[i] = j < a_len ? in_k[a0 + j] : in_k[b0 + (j - a_len) < last ? b0 + (j - a_len) : last];
    }
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const int j = threadIdx.x + i * Threads;
      if (j < count) s.keys[j] = tmp[i];
    }
  }
  if constexpr (HasValues) {
    Value tmp[Items];
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const int j = threadIdx.x + i * Threads;
      if (j < count) tmp[i] = j < a_len ? in_v[a0 + j] : in_v[b0 + (j - a_len) < last ? b0 + (j - a_len) : last];
    }
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const int j = threadIdx.x + i * Threads;
      if (j < count) s.values[j] = tmp[i];
    }
  }
  sync();
  const int start = min(int(threadIdx.x) * Items, count);
  const int split = merge_path<int>(s.keys, a_len, s.keys + a_len, count - a_len, start, comp);
  Key k[Items];
  Value v[Items];
  int idx[Items];
  serial_merge<Key, Items>(s.keys, split, a_len, a_len + start - split, count, k, idx, comp);
  if constexpr (HasValues) {
#pragma unroll
    for (int i = 0; i < Items; ++i)
      if (start + i < count) v[i] = s.values[idx[i]];
  }
  if constexpr (WarpStore) {
    store_blocked_by_warp<Key, Threads, Items, SampleLog2>(out_k + p0, count, s.keys, k, p0, samples);
    if constexpr (HasValues) store_blocked_by_warp<Value, Threads, Items>(out_v + p0, count, s.values, v);
  } else {
    store_blocked<Key, Threads, Items>(out_k + p0, count, s.keys, threadIdx.x, k, sync);
    if constexpr (SampleLog2 > 0) {
      // s.keys holds the tile in output order behind store_blocked's last barrier.
      constexpr std::size_t step = std::size_t(1) << SampleLog2;
      for (std::size_t q = ((p0 + step - 1) >> SampleLog2) + threadIdx.x; (q << SampleLog2) < p1; q += Threads)
        samples[q] = s.keys[(q << SampleLog2) - p0];
    }
    if constexpr (HasValues) store_blocked<Value, Threads, Items>(out_v + p0, count, s.values, threadIdx.x, v, sync);
  }
}

//! One device-wide merge pass: block j writes output tile j using splits[j], splits[j + 1].
//! MinBlocks: resident blocks per SM asked of the register allocator (__launch_bounds__; 0 gives
//! none, as __launch_bounds__(Threads) alone).
template <class Key, class Value, bool HasValues, int Threads, int Items, bool WarpStore, int MinBlocks, int SampleLog2,
          class Comp>
__global__ void __launch_bounds__(Threads, MinBlocks) merge_pass_kernel(const Key* in_k, const Value* in_v, Key* out_k,
                                                             Value* out_v, std::size_t n, std::size_t width,
                                                             const std::size_t* splits, Key* samples, Comp comp) {
  dependent_launch_trigger_and_wait();
  constexpr int tile = Threads * Items;
  __shared__ group_storage<Key, Value, HasValues, tile> s;
  const std::size_t p0 = std::size_t(blockIdx.x) * tile;
  const std::size_t p1 = p0 + tile < n ? p0 + tile : n;
  const std::size_t pair_start = p0 / (2 * width) * (2 * width);
  const std::size_t pair_end = pair_start + 2 * width < n ? pair_start + 2 * width : n;
  const std::size_t a_end = pair_start + width < n ? pair_start + width : n;
  const std::size_t a0 = splits[blockIdx.x];
  // splits[j + 1] belongs to the next pair when this tile ends the pair.
  const std::size_t a1 = p1 == pair_end ? a_end : splits[blockIdx.x + 1];
  merge_tile<Key, Value, HasValues, Threads, Items, WarpStore, SampleLog2>(in_k, in_v, out_k, out_v, n, width, p0, p1,
                                                                            a0, a1, s, comp, samples);
}

}  // namespace canopy::detail

#endif  // CANOPY_HAS_CUDA && __CUDACC__
