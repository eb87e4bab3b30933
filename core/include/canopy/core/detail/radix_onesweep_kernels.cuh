// canopy/core/detail/radix_onesweep_kernels.cuh — the CUDA kernels of split and LSD radix sort.
//
// Onesweep structure (after Adinets & Merrill 2022), one kernel per 8-bit pass:
//   1. digit_histogram_kernel: one read of the keys counts the digits of *every* pass at once;
//      digit_offsets_kernel turns each pass's counts into exclusive global bin offsets.
//   2. onesweep_pass_kernel, per tile of TILE records:
//      - tile ids come from an atomic counter, so tile t only waits on tiles that already run;
//      - early counts: each warp counts its digits with shared atomics, the block sums them and
//        publishes the tile's per-digit counts at once (flag AGGREGATE), before ranking;
//      - warp-level ranking: each warp takes its keys in position order (item i, then lane),
//        groups equal digits with one ballot per digit bit; the lowest lane of a group adds the
//        group's size to the warp's running offset of that digit (shared atomic) and broadcasts
//        the old value; rank = that value + peers on lower lanes (stable);
//      - 256 threads, one per digit, look back over earlier tiles' words for their digit, eight
//        tiles per read, until an INCLUSIVE prefix, then publish their own inclusive prefix
//        (decoupled look-back over digit bins);
//      - records are placed in shared memory in split order, then written out so that each
//        digit's run leaves the block contiguously (coalesced).
// Look-back words pack a 2-bit flag over a 30-bit count, hence n < 2^30 per call.
#pragma once

#include <canopy/core/detail/split_host.cuh>
#include <canopy/core/key_traits.hpp>

#include <cstdint>
#include <type_traits>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy::detail::onesweep {

constexpr int radix = 256;
constexpr int max_passes = 8;
constexpr std::uint32_t flag_aggregate = 1u << 30;
constexpr std::uint32_t flag_inclusive = 2u << 30;
constexpr std::uint32_t value_mask = (1u << 30) - 1;
constexpr std::uint32_t max_elements = value_mask;  // counts must fit the 30-bit field

//! Tile shape: 384 threads (2 blocks per SM at <= 85 registers) x items per thread. 4-byte records:
//! 20 items (7680 keys, 30 KiB exchange buffer); 8-byte keys or values: 12 items (36 KiB), both
//! under the 48 KiB static shared-memory limit. Measured on an H200 at 2^26 (docs/performance/
//! sort.md): 20 items beat 16 for 4-byte records by 5%, 12 beat 10 for 8-byte ones by 8%.
//! The macros exist to repeat such measurements.
#ifndef CANOPY_ONESWEEP_ITEMS_4
#define CANOPY_ONESWEEP_ITEMS_4 20
#endif
#ifndef CANOPY_ONESWEEP_ITEMS_8
#define CANOPY_ONESWEEP_ITEMS_8 12
#endif
template <class K, class V>
struct tuning {
  static constexpr int threads = 384;
  static constexpr int items = (sizeof(K) == 4 && (std::is_same_v<V, no_value> || sizeof(V) == 4))
                                   ? CANOPY_ONESWEEP_ITEMS_4
                                   : CANOPY_ONESWEEP_ITEMS_8;
  static constexpr int tile = threads * items;
  static constexpr int warps = threads / 32;
};

template <class K, class V>
struct pass_args {
  const K* keys_in;
  K* keys_out;                        //!< null on a last pass whose keys nobody reads
  const V* vals_in;                   //!< null: value = input position (index variants)
  V* vals_out;
  std::uint32_t n;
  int shift;                          //!< digit = (ordered(key) >> shift) & mask
  std::uint32_t mask;
  key_kind kind;
  const std::uint32_t* digit_offsets; //!< [256] exclusive global start of each digit in this pass
  std::uint32_t* lookback;            //!< [tiles][256], zeroed before the pass
  std::uint32_t* tile_counter;        //!< zeroed before the pass
};

__device__ __forceinline__ std::uint32_t load_relaxed(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_relaxed(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

//! Lanes of the warp whose digit equals d (d in [0, 256], 256 = no record). Eight ballots, one
//! per digit bit, are cheaper than __match_any_sync on sm_70..sm_90; a ninth on the "no record"
//! bit is needed only in the last, partial tile.
__device__ __forceinline__ std::uint32_t match_digit(std::uint32_t d, bool full_tile) {
#if defined(CANOPY_ONESWEEP_MATCH_ANY)  // measured 1.3x slower per sort on an H200; kept for re-measuring
  return __match_any_sync(0xffffffffu, d);
#endif
  std::uint32_t peers = 0xffffffffu;
#pragma unroll
  for (int b = 0; b < 8; ++b) {
    const bool set = (d >> b) & 1u;
    const std::uint32_t ballot = __ballot_sync(0xffffffffu, set);
    peers &= set ? ballot : ~ballot;
  }
  if (!full_tile) {
    const bool set = d >> 8;
    const std::uint32_t ballot = __ballot_sync(0xffffffffu, set);
    peers &= set ? ballot : ~ballot;
  }
  return peers;
}

template <class K, class V>
__global__ void __launch_bounds__(tuning<K, V>::threads, 2) onesweep_pass_kernel(pass_args<K, V> a) {
  using T = tuning<K, V>;
  constexpr int threads = T::threads, items = T::items, tile_size = T::tile, warps = T::warps;
  constexpr bool has_values = !std::is_same_v<V, no_value>;
  constexpr std::size_t record_bytes = (has_values && sizeof(V) > sizeof(K)) ? sizeof(V) : sizeof(K);
  constexpr std::size_t exchange_bytes = tile_size * record_bytes;
  constexpr std::size_t hist_bytes = 2 * std::size_t(warps) * radix * 4;  // counts + running offsets
  // The per-warp digit counters and the exchange buffer are never live at the same time.
  __shared__ alignas(16) unsigned char smem[exchange_bytes > hist_bytes ? exchange_bytes : hist_bytes];
  __shared__ std::uint32_t s_delta[radix];  // global output slot of a digit's run minus its tile slot
  __shared__ std::uint32_t s_warp_sums[radix / 32];
  __shared__ std::uint32_t s_tile;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  std::uint32_t* warp_hist = reinterpret_cast<std::uint32_t*>(smem);  // [warps][radix]
  if (tid == 0) s_tile = atomicAdd(a.tile_counter, 1u);
  for (int i = tid; i < int(hist_bytes / 4); i += threads) warp_hist[i] = 0;
  __syncthreads();
  const std::uint32_t tile = s_tile;
  const std::uint32_t tile_base = tile * tile_size;
  const std::uint32_t tile_n = min(std::uint32_t(tile_size), a.n - tile_base);

  // Warp-striped load: warp w owns positions [w*items*32, (w+1)*items*32) of the tile.
  const std::uint32_t warp_base = tile_base + std::uint32_t(warp) * items * 32;
  K keys[items];
  std::uint32_t digit[items];  // radix marks a slot past the end
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const std::uint32_t idx = warp_base + i * 32 + lane;
    if (idx < a.n) {
      keys[i] = a.keys_in[idx];
      digit[i] = std::uint32_t(to_ordered_bits(keys[i], a.kind) >> a.shift) & a.mask;
    } else {
      digit[i] = radix;
    }
  }

  std::uint32_t pos[items];
  std::uint32_t* my_hist = warp_hist + warp * radix;
  const std::uint32_t lanes_below = (1u << lane) - 1u;
  const bool full_tile = tile_n == std::uint32_t(tile_size);
  // Early counts: per-warp digit counts by shared atomics first, so the tile's aggregate is
  // published before the (serial) ranking; ranking then starts from each warp's final offsets.
  std::uint32_t* running = warp_hist + warps * radix;  // [warps][radix]
#pragma unroll
  for (int i = 0; i < items; ++i)
    if (digit[i] < radix) atomicAdd(&my_hist[digit[i]], 1u);
  __syncthreads();
  std::uint32_t count = 0;
  if (tid < radix) {
#pragma unroll
    for (int w = 0; w < warps; ++w) {
      const std::uint32_t c = warp_hist[w * radix + tid];
      running[w * radix + tid] = count;
      count += c;
    }
    store_relaxed(a.lookback + std::size_t(tile) * radix + tid, (tile == 0 ? flag_inclusive : flag_aggregate) | count);
  }
  std::uint32_t inclusive = count;
  if (tid < radix) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const std::uint32_t v = __shfl_up_sync(0xffffffffu, inclusive, o);
      if (lane >= o) inclusive += v;
    }
    if (lane == 31) s_warp_sums[warp] = inclusive;
  }
  __syncthreads();
  std::uint32_t local_start = 0;
  if (tid < radix) {
    local_start = inclusive - count;
    for (int w = 0; w < warp; ++w) local_start += s_warp_sums[w];
#pragma unroll
    for (int w = 0; w < warps; ++w) running[w * radix + tid] += local_start;
  }
  __syncthreads();
  std::uint32_t* my_running = running + warp * radix;
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const std::uint32_t d = digit[i];
    const std::uint32_t peers = match_digit(d, full_tile);
    const int leader = __ffs(peers) - 1;
    std::uint32_t before = 0;
    if (d < radix && lane == leader) before = atomicAdd(&my_running[d], std::uint32_t(__popc(peers)));
    pos[i] = __shfl_sync(0xffffffffu, before, leader) + __popc(peers & lanes_below);
    __syncwarp();  // item i+1's counter update must follow item i's, whichever lanes lead them
  }
  if (tid < radix) {
    std::uint32_t prefix = 0;
    if (tile > 0) {
      // Windowed look-back: the words of `window` predecessors are read at once, so a walk over
      // many aggregate-only tiles costs one memory latency per window, not per tile.
      constexpr int window = 8;
      int j = int(tile) - 1;
      bool done = false;
      while (!done) {
        std::uint32_t v[window];
#pragma unroll
        for (int w = 0; w < window; ++w)
          v[w] = j - w >= 0 ? load_relaxed(a.lookback + std::size_t(j - w) * radix + tid) : flag_inclusive;
#pragma unroll
        for (int w = 0; w < window; ++w) {
          if (done || (v[w] & ~value_mask) == 0) break;  // found the prefix, or tile j-w has not published
          prefix += v[w] & value_mask;
          --j;
          if (v[w] & flag_inclusive) done = true;
        }
      }
      store_relaxed(a.lookback + std::size_t(tile) * radix + tid, flag_inclusive | (prefix + count));
    }
    s_delta[tid] = a.digit_offsets[tid] + prefix - local_start;
  }
  __syncthreads();  // the exchange buffer overwrites the counters

  K* s_keys = reinterpret_cast<K*>(smem);
#pragma unroll
  for (int i = 0; i < items; ++i)
    if (digit[i] < radix) s_keys[pos[i]] = keys[i];
  __syncthreads();

  std::uint32_t out_slot[items];
#pragma unroll
  for (int k = 0; k < items; ++k) {
    const std::uint32_t j = tid + k * threads;
    if (j < tile_n) {
      const K key = s_keys[j];
      const std::uint32_t d = std::uint32_t(to_ordered_bits(key, a.kind) >> a.shift) & a.mask;
      out_slot[k] = s_delta[d] + j;
      if (a.keys_out) a.keys_out[out_slot[k]] = key;
    }
  }

  if constexpr (has_values) {
    V vals[items];
#pragma unroll
    for (int i = 0; i < items; ++i) {
      const std::uint32_t idx = warp_base + i * 32 + lane;
      if (idx < a.n) vals[i] = a.vals_in ? a.vals_in[idx] : V(idx);
    }
    __syncthreads();
    V* s_vals = reinterpret_cast<V*>(smem);
#pragma unroll
    for (int i = 0; i < items; ++i)
      if (digit[i] < radix) s_vals[pos[i]] = vals[i];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < items; ++k) {
      const std::uint32_t j = tid + k * threads;
      if (j < tile_n) a.vals_out[out_slot[k]] = s_vals[j];
    }
  }
}

//! Counts the digits of passes [0, passes) of every key into hist[pass][256] (zeroed before).
//! Each thread takes `hist_items` consecutive keys per step (independent loads in flight hide
//! memory latency); runs of equal digits within them are merged before the shared atomic, so that
//! sorted or constant inputs do not serialise on one counter.
constexpr int hist_items = 8;
template <class K>
__global__ void __launch_bounds__(256) digit_histogram_kernel(const K* keys, std::uint32_t n, int begin_bit,
                                                              int end_bit, int passes, key_kind kind,
                                                              std::uint32_t* hist) {
  __shared__ std::uint32_t s_hist[max_passes * radix];
  for (int i = threadIdx.x; i < passes * radix; i += blockDim.x) s_hist[i] = 0;
  __syncthreads();
  const std::size_t step = std::size_t(gridDim.x) * blockDim.x * hist_items;
  for (std::size_t base = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) * hist_items; base < n; base += step) {
    K ordered[hist_items];
    const int count = int(min(std::size_t(hist_items), n - base));
#pragma unroll
    for (int i = 0; i < hist_items; ++i)
      if (i < count) ordered[i] = to_ordered_bits(keys[base + i], kind);
#pragma unroll
    for (int p = 0; p < max_passes; ++p) {
      if (p < passes) {
        const int shift = begin_bit + 8 * p;
        const int bits = min(8, end_bit - shift);
        const std::uint32_t mask = (1u << bits) - 1u;
        std::uint32_t run_digit = std::uint32_t(ordered[0] >> shift) & mask, run = 1;
#pragma unroll
        for (int i = 1; i < hist_items; ++i) {
          if (i < count) {
            const std::uint32_t d = std::uint32_t(ordered[i] >> shift) & mask;
            if (d != run_digit) {
              atomicAdd(&s_hist[p * radix + run_digit], run);
              run_digit = d;
              run = 0;
            }
            ++run;
          }
        }
        atomicAdd(&s_hist[p * radix + run_digit], run);
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < passes * radix; i += blockDim.x)
    if (s_hist[i]) atomicAdd(&hist[i], s_hist[i]);
}

//! In place, per pass (one block of 256 threads each): digit counts -> exclusive digit offsets.
static __global__ void __launch_bounds__(256) digit_offsets_kernel(std::uint32_t* hist) {
  __shared__ std::uint32_t s[radix];
  std::uint32_t* h = hist + blockIdx.x * radix;
  s[threadIdx.x] = h[threadIdx.x];
  __syncthreads();
  std::uint32_t sum = 0;
  for (unsigned d = 0; d < threadIdx.x; ++d) sum += s[d];
  h[threadIdx.x] = sum;
}

}  // namespace canopy::detail::onesweep

#endif
