// canopy/core/detail/radix_hybrid.cuh — radix sort of 8-byte keys on CUDA as two LSD passes over
// 16 bucket bits at the top of where the keys vary, then a sort of each bucket in shared memory.
//
// Why: an LSD pass over 8-byte keys reads and writes 16 bytes per key (24 with a 4-byte value),
// and a 64-bit window takes eight of them. Sorting by 16 high bits first (two passes) leaves
// 65536 buckets in order; each bucket then only needs sorting by the bits below, which a block
// does in shared memory in one read and one write (segmented_sort, bins by size). That is 3
// instead of 8 round trips through memory (64-bit windows) when the bucket bits spread the keys (after Stehle & Jacobsen 2017, who sort buckets locally once MSD passes have
// made them small). Measured in docs/performance/sort.md.
//
// Steps, all on the context's stream, none synchronising:
//   1. bucket_plan_kernel (one block): the bucket bits are the 16 below the highest window bit
//      that varies in a sample of the keys (bits every key shares split nothing); a sample that
//      piles up in one bucket (heavy skew) turns the hybrid off at once (steps 2, 3, 5 do nothing).
//   2. Two LSD passes over those bits (digits placed on the device, lsd_job::shift_base): the
//      keys (and values) end in the caller's buffers, in bucket order, stable.
//   3. bucket_bounds_kernel: offsets[u] = first position of a bucket >= u (65537 words, each
//      written once), and two checks: every key shares the bits above the buckets, and no bucket
//      holds more than hybrid_max_bucket keys (skewed inputs: few distinct values, many keys
//      sharing their high bits).
//   4. bucket_guard_kernel (one block): if step 1 turned the hybrid off or a check of step 3
//      failed, it zeroes every offset, so that step 5 finds only empty segments, and raises the
//      fallback word.
//   5. Each bucket sorted by one thread block in shared memory, stably: by the segmented sort
//      (merge based; large buckets merge through the alternate buffers), or where the mean bucket
//      is larger than its one-block tile, by bucket_radix_kernel (LSD over the bits below the
//      buckets, onesweep ranking).
//   6. Fallback: the plain LSD run over the whole window, gated on that word (its kernels exit at
//      once when the word is 0), from the bucket-sorted keys. Stable either way, and the result is
//      in the caller's buffers in both cases, as it is for a plain LSD run of an even pass count.
// Taken only where plan_hybrid says; included by radix_sort.cu only.
#pragma once

#include <canopy/core/detail/radix_engine.cuh>
#include <canopy/core/segmented_sort.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy::detail {

constexpr int hybrid_top_bits = 16;
constexpr std::uint32_t hybrid_buckets = 1u << hybrid_top_bits;
//! Below this many keys the plain LSD run is used: on an H100 LSD was faster at 2^21 keys (0.177
//! against 0.199 ms) and slower at 2^22 (0.347 against 0.293 ms), docs/performance/sort.md.
constexpr std::size_t hybrid_min_keys = std::size_t(1) << 22;
//! Largest bucket the segmented sort is given; larger ones make the whole call fall back to LSD
//! (a bucket is sorted by one thread block, so a few huge ones would serialise the sort; buckets
//! of 32K keys were measured slower than the fallback, 8K ones about as fast as LSD).
constexpr std::uint32_t hybrid_max_bucket = 16384;

//! Test hooks (core/src/radix_sort.cu). fallback_probe (a device word): every hybrid sort also
//! writes there how it ended (0: buckets sorted; 1: fallback after the bucket passes; 2: fallback
//! predicted by the sample, bucket passes skipped), so that tests can check which regime an input
//! took. max_bucket / min_keys: when nonzero, replace hybrid_max_bucket / hybrid_min_keys (tests
//! and measurements; min_keys is not taken below 2^17, where the sample would overlap).
//! local_sort: 1 forces the segmented sort, 2 the bucket radix kernel (where its shape fits); 0
//! the default choice.
struct hybrid_testing_hooks {
  std::uint32_t* fallback_probe = nullptr;
  std::uint32_t max_bucket = 0;
  std::size_t min_keys = 0;
  int local_sort = 0;
};
hybrid_testing_hooks& hybrid_testing();

constexpr int bucket_threads = 256;  // one scan thread per digit
//! Keys a bucket kernel of `items` items per thread holds.
constexpr std::uint32_t bucket_cap(int items) { return std::uint32_t(bucket_threads) * std::uint32_t(items); }
template <class K, class V, int Items>
constexpr std::size_t bucket_smem_bytes =
    std::size_t(bucket_threads / 32) * 256 * 4 + bucket_cap(Items) * (sizeof(K) + (std::is_same_v<V, no_value> ? 0 : sizeof(V)));

//! How a hybrid sort runs, or that it does not (use == false).
struct hybrid_plan {
  bool use = false;
  bool radix_local = false;  //!< buckets sorted by bucket_radix_kernel (else the segmented sort)
  int items = 0;             //!< the bucket kernel's items per thread (bucket_cap)
  std::uint32_t max_bucket = 0;
};

//! The bucket kernel's shape for n keys: the fewer items per thread (12 or 20) whose capacity holds
//! a bucket of mean n / 65536 plus eight standard deviations (uniform keys never exceed it); 0 when
//! neither does.
inline int bucket_items_for(std::size_t n) {
  const double mean = double(n) / hybrid_buckets;
  const double need = mean + 8.0 * std::sqrt(mean) + 32.0;
  for (int items : {12, 20})
    if (double(bucket_threads) * items >= need) return items;
  return 0;
}

//! Whether and how radix sort takes the hybrid path for n keys of type K (values V) over
//! [begin_bit, end_bit): CUDA, 8-byte keys, windows of 8 passes (57-64 bits; a 48-bit window saves
//! too few passes: measured no better), n >= hybrid_min_keys. Buckets are sorted by the segmented
//! sort while the mean bucket fits its largest one-block tile (4352 keys, 3328 key/u32 pairs, 2304
//! key/u64 pairs), else by the bucket radix kernel where its shape fits (pairs from about 2^27.7
//! keys: 1.43x CUB at 2^28 for u64/u32 where LSD gives 0.95x; for smaller buckets it lost to the
//! segmented sort, 1.20 against 1.43x CUB for u64 keys at 2^26, H100, docs/performance/sort.md).
template <class K, class V>
hybrid_plan plan_hybrid(const context& ctx, std::size_t n, int begin_bit, int end_bit) {
  hybrid_plan plan;
  const hybrid_testing_hooks& hooks = hybrid_testing();
  const std::size_t min_keys = hooks.min_keys != 0 ? std::max(hooks.min_keys, std::size_t(1) << 17) : hybrid_min_keys;
  if (!ctx.is_cuda() || sizeof(K) != 8 || lsd_passes(begin_bit, end_bit) != 8 || n < min_keys ||
      n > onesweep::max_elements)
    return plan;
  constexpr bool has_values = !std::is_same_v<V, no_value>;
  using tune = segsort_tuning<K, std::conditional_t<has_values, V, merge_no_value>, has_values>;
  const bool segsort_fits = n <= std::size_t(hybrid_buckets) * tune::upper[segsort_bins - 2];
  const int items = bucket_items_for(n);
  const std::size_t smem = items == 12 ? bucket_smem_bytes<K, V, 12> : bucket_smem_bytes<K, V, 20>;
  const bool radix_fits = items != 0 && smem <= ctx.device().shared_memory_per_block_optin;
  if (hooks.local_sort == 1) plan.radix_local = false;
  else if (hooks.local_sort == 2) plan.radix_local = true;
  else plan.radix_local = !segsort_fits;
  if (plan.radix_local ? !radix_fits : !segsort_fits) return plan;
  plan.use = true;
  plan.items = plan.radix_local ? items : 0;
  plan.max_bucket = plan.radix_local ? bucket_cap(items) : hybrid_max_bucket;
  if (hooks.max_bucket != 0) plan.max_bucket = std::min(plan.max_bucket, hooks.max_bucket);
  return plan;
}

//! Orders keys by the ordered form of their window bits (the comparator of step 5; within a bucket
//! only the bits below the bucket bits differ).
template <class K>
struct hybrid_window_less {
  K mask;
  key_kind kind;
  __device__ __forceinline__ bool operator()(K x, K y) const {
    return (to_ordered_bits(x, kind) & mask) < (to_ordered_bits(y, kind) & mask);
  }
};

//! Bits [lo, hi) set (0 <= lo <= hi <= 64).
CANOPY_HD CANOPY_FORCEINLINE std::uint64_t bit_range(int lo, int hi) {
  const std::uint64_t below_hi = hi >= 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << hi) - 1;
  const std::uint64_t below_lo = lo >= 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << lo) - 1;
  return below_hi & ~below_lo;
}

//! Step 1, one block of plan_threads, over `samples` keys (16384 to 65536, a multiple of
//! plan_threads) spread over the input (one in each stretch of n / samples keys, at a hashed place):
//! - where the 16 bucket bits go. Bits of the window that are the same in every key cannot split
//!   anything (keys below 2^48 in a 64-bit window, say), so the buckets take the 16 bits below the
//!   highest bit that varies in the sample: *shift = max(begin_bit, top varying bit + 1 - 16). A
//!   sample can miss a bit that varies in few keys; step 3 checks every key and raises *bad then.
//! - whether to try the buckets at all: *hybrid_on = 0 when the sample shows a bucket far beyond
//!   max_bucket (so the guard would fall back anyway, after two wasted passes). Exact: a 16-bit
//!   counter per bucket in 128 KiB of shared memory; a bucket with c samples holds about
//!   c n / samples keys, and the hybrid is off when that exceeds 2 max_bucket with c >= 8 (12 for
//!   more than 16384 samples: uniform keys put 0.25-1 samples in a bucket, and 8 or 12 in any of the
//!   65536 has odds below 1e-4 per sort). Devices with less shared memory count into 8192 hashed
//!   bins (which can only add up): off when c >= 32 and c n / samples > 8 max_bucket. Skew that
//!   the sample cannot resolve is caught by the guard, after the bucket passes.
//! Also clears *bad.
constexpr int plan_threads = 1024;
constexpr int plan_hash_bins = 8192;
//! Samples for n keys: about one per 4096 keys, at least 16384 and at most 65536 (a multiple of
//! plan_threads); the hashed bins take 16384.
inline std::uint32_t plan_samples_for(std::size_t n, bool exact) {
  std::uint32_t s = 16384;
  while (exact && s < 65536 && std::size_t(s) * 4096 < n) s *= 2;
  return s;
}
template <bool Exact>
constexpr std::size_t plan_smem_bytes = Exact ? std::size_t(hybrid_buckets) * 2 : std::size_t(plan_hash_bins) * 4;
//! Whether the device lets the plan kernel count exactly (128 KiB of shared memory per block).
inline bool plan_exact_bins(const device_info& d) { return d.shared_memory_per_block_optin >= plan_smem_bytes<true> + 1024; }

template <class K, bool Exact>
__global__ void __launch_bounds__(plan_threads) bucket_plan_kernel(const K* keys, std::uint32_t n, std::uint32_t samples,
                                                                  int begin_bit, int end_bit, key_kind kind,
                                                                  std::uint32_t max_bucket, int* shift,
                                                                  std::uint32_t* hybrid_on, std::uint32_t* bad) {
  extern __shared__ std::uint32_t plan_bins[];  // Exact: [65536] 16-bit counters, two a word; else [8192]
  __shared__ K s_any[plan_threads / 32], s_all[plan_threads / 32];
  __shared__ int s_shift;
  constexpr int words = int(plan_smem_bytes<Exact> / 4);
  for (int i = threadIdx.x; i < words; i += plan_threads) plan_bins[i] = 0;
  const std::uint32_t stride = n / samples;  // >= 2 (n >= 2^17, plan_hybrid)
  // Sample s sits at s * stride + h(s) % stride: jittered, so that no period of the input (every
  // 1024th key alike, say) lines up with the samples.
  const auto sample_key = [&](std::uint32_t sample) {
    const std::uint32_t jitter = ((sample + 1) * 0x9E3779B1u) % stride;
    return to_ordered_bits(keys[std::size_t(sample) * stride + jitter], kind);
  };
  K any = 0, all = ~K(0);
  for (std::uint32_t sample = threadIdx.x; sample < samples; sample += plan_threads) {
    const K o = sample_key(sample);
    any |= o;
    all &= o;
  }
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    any |= __shfl_xor_sync(0xffffffffu, any, d);
    all &= __shfl_xor_sync(0xffffffffu, all, d);
  }
  if ((threadIdx.x & 31) == 0) s_any[threadIdx.x / 32] = any, s_all[threadIdx.x / 32] = all;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < plan_threads / 32; ++w) any |= s_any[w], all &= s_all[w];
    const std::uint64_t varying = std::uint64_t(any ^ all) & bit_range(begin_bit, end_bit);
    const int top = varying != 0 ? 63 - __clzll(static_cast<long long>(varying)) : -1;
    s_shift = max(begin_bit, top + 1 - hybrid_top_bits);
  }
  __syncthreads();
  const int sh = s_shift;
  std::uint32_t most = 0;
  for (std::uint32_t sample = threadIdx.x; sample < samples; sample += plan_threads) {  // in L1/L2 now
    const std::uint32_t bucket = std::uint32_t(sample_key(sample) >> sh) & (hybrid_buckets - 1);
    std::uint32_t count;
    if constexpr (Exact) {
      const std::uint32_t half = 16 * (bucket & 1);  // at most 65536 samples: no carry into the other half
      count = ((atomicAdd(&plan_bins[bucket >> 1], 1u << half) >> half) & 0xffffu) + 1;
    } else {
      count = atomicAdd(&plan_bins[(bucket * 0x9E3779B1u) >> 19], 1u) + 1;  // top 13 bits of a hash
    }
    most = max(most, count);
  }
  const std::uint32_t least = Exact ? (samples > 16384 ? 12u : 8u) : 32u;
  const std::uint64_t keys_over = std::uint64_t(Exact ? 2 : 8) * max_bucket;
  const bool skewed = __syncthreads_or(most >= least && std::uint64_t(most) * n > keys_over * samples) != 0;
  if (threadIdx.x == 0) {
    *shift = sh;
    *hybrid_on = skewed ? 0u : 1u;
    *bad = 0u;
  }
}

//! Step 3 (nothing when step 1 turned the hybrid off). Thread i in [0, n] writes offsets[u] = i
//! for every bucket u in (top(i - 1), top(i)], with top(-1) = -1 and top(n) = 65536, so each of
//! the 65537 words is written once. Two checks raise *bad (one store per block that finds
//! something, and only while *bad is still 0):
//! - a key that differs from the first one on the window's bits above the buckets (the sample
//!   missed a varying bit: the buckets are not in order);
//! - a bucket of more than max_bucket keys: the thread at its end (where top changes) finds key
//!   i - 1 - max_bucket in the same bucket (the keys are in bucket order).
template <class K>
__global__ void __launch_bounds__(256) bucket_bounds_kernel(const K* keys, std::uint32_t n, const int* shift_word,
                                                            const std::uint32_t* hybrid_on, int end_bit, key_kind kind,
                                                            std::uint32_t max_bucket, std::uint32_t* offsets,
                                                            std::uint32_t* bad) {
  if (*hybrid_on == 0u) return;
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const int shift = *shift_word;
  const auto top = [&](K o) { return int((o >> shift) & K(hybrid_buckets - 1)); };
  bool wrong = false;
  if (i <= n) {
    const K here = i < n ? to_ordered_bits(keys[i], kind) : K(0);
    const int hi = i < n ? top(here) : int(hybrid_buckets);
    const int lo = i == 0 ? -1 : top(to_ordered_bits(keys[i - 1], kind));
    for (int u = lo + 1; u <= hi; ++u) offsets[u] = i;
    if (i < n && shift + hybrid_top_bits < end_bit)
      wrong = ((here ^ to_ordered_bits(keys[0], kind)) & K(bit_range(shift + hybrid_top_bits, end_bit))) != 0;
    if (lo != hi && lo >= 0 && i - 1 >= max_bucket)
      wrong |= top(to_ordered_bits(keys[i - 1 - max_bucket], kind)) == lo;
  }
  if (__syncthreads_or(wrong) && threadIdx.x == 0 && atomicOr(bad, 0u) == 0u) atomicExch(bad, 1u);
}

//! Step 4, one block of guard_threads: fallback[0] = 1 and every offset zeroed when step 1 turned
//! the hybrid off or step 3 raised *bad; else fallback[0] = 0.
constexpr int guard_threads = 1024;
static __global__ void __launch_bounds__(guard_threads)
    bucket_guard_kernel(std::uint32_t* offsets, const std::uint32_t* hybrid_on, const std::uint32_t* bad,
                        std::uint32_t* fallback, std::uint32_t* probe) {
  const bool off = *hybrid_on == 0u;
  const bool fall_back = off || *bad != 0u;
  if (fall_back)
    for (std::uint32_t u = threadIdx.x; u <= hybrid_buckets; u += guard_threads) offsets[u] = 0;
  if (threadIdx.x == 0) {
    fallback[0] = fall_back ? 1u : 0u;
    if (probe != nullptr) probe[0] = off ? 2u : fall_back ? 1u : 0u;
  }
}

//! Step 5, radix variant: block b sorts bucket b, [offsets[b], offsets[b + 1]) (at most
//! bucket_cap(Items) keys: the guard checked), stably by the ordered key's bits [lo_bit, *hi_word)
//! (below the bucket bits; the bits above are equal within a bucket), in shared memory: LSD over
//! 8-bit digits, each pass the onesweep ranking (per-warp digit counts by shared atomics, a scan
//! over (digit, warp), then each warp ranks its keys in position order with ballots, so equal
//! digits keep their order). Positions are warp-striped (warp w holds [w Items 32, (w + 1) Items
//! 32), item i of lane l at w Items 32 + 32 i + l): loads and stores are coalesced rows of 32. Rows
//! past the bucket's end are skipped; the unused lanes of its last row hold the all-ones key
//! (largest digit, highest positions), so they rank behind every key and are never written.
template <class K, class V, int Items>
__global__ void __launch_bounds__(bucket_threads) bucket_radix_kernel(K* keys, V* vals, const std::uint32_t* offsets,
                                                                     int lo_bit, const int* hi_word, key_kind kind) {
  constexpr bool has_values = !std::is_same_v<V, no_value>;
  constexpr int warps = bucket_threads / 32;
  extern __shared__ __align__(16) unsigned char bucket_smem[];
  std::uint32_t* counters = reinterpret_cast<std::uint32_t*>(bucket_smem);  // [warps][256]
  K* s_keys = reinterpret_cast<K*>(bucket_smem + warps * 256 * 4);
  V* s_vals = reinterpret_cast<V*>(s_keys + bucket_cap(Items));  // pairs only
  __shared__ std::uint32_t s_warp_sums[warps];
  const std::uint32_t begin = offsets[blockIdx.x];
  const std::uint32_t m = offsets[blockIdx.x + 1] - begin;
  const int hi_bit = *hi_word;
  if (m <= 1 || hi_bit <= lo_bit) return;  // uniform per block
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const std::uint32_t warp_base = std::uint32_t(warp) * Items * 32;
  const int rows = m > warp_base ? int(min(std::uint32_t(Items), (m - warp_base + 31) / 32)) : 0;
  K k[Items];
  V v[has_values ? Items : 1];
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const std::uint32_t idx = warp_base + i * 32 + lane;
    if (i < rows) {
      k[i] = idx < m ? to_ordered_bits(keys[begin + idx], kind) : ~K(0);
      if constexpr (has_values) v[i] = idx < m ? vals[begin + idx] : V(0);
    }
  }
  std::uint32_t* my = counters + warp * 256;
  const std::uint32_t lanes_below = (1u << lane) - 1u;
  for (int shift = lo_bit; shift < hi_bit; shift += 8) {
    const std::uint32_t mask = (1u << min(8, hi_bit - shift)) - 1u;
    for (int j = tid; j < warps * 256; j += bucket_threads) counters[j] = 0;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < Items; ++i)
      if (i < rows) atomicAdd(&my[std::uint32_t(k[i] >> shift) & mask], 1u);
    __syncthreads();
    // Thread t = digit t: counts of (warp, t) -> keys of t in earlier warps, then the block's
    // exclusive scan over digits.
    std::uint32_t running = 0;
#pragma unroll
    for (int w = 0; w < warps; ++w) {
      const std::uint32_t c = counters[w * 256 + tid];
      counters[w * 256 + tid] = running;
      running += c;
    }
    const std::uint32_t inclusive = onesweep::warp_inclusive_sum(running);
    if (lane == 31) s_warp_sums[warp] = inclusive;
    __syncthreads();
    std::uint32_t start = inclusive - running;
    for (int w = 0; w < warp; ++w) start += s_warp_sums[w];
#pragma unroll
    for (int w = 0; w < warps; ++w) counters[w * 256 + tid] += start;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      if (i < rows) {  // uniform per warp
        const std::uint32_t d = std::uint32_t(k[i] >> shift) & mask;
        const std::uint32_t peers = onesweep::match_digit<8>(d);
        const int leader = __ffs(peers) - 1;
        std::uint32_t before = 0;
        if (lane == leader) before = atomicAdd(&my[d], std::uint32_t(__popc(peers)));
        const std::uint32_t slot = __shfl_sync(0xffffffffu, before, leader) + __popc(peers & lanes_below);
        s_keys[slot] = k[i];
        if constexpr (has_values) s_vals[slot] = v[i];
        __syncwarp();  // item i+1's counter update follows item i's, whichever lanes lead them
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      if (i < rows) {
        const std::uint32_t idx = warp_base + i * 32 + lane;
        k[i] = s_keys[idx];
        if constexpr (has_values) v[i] = s_vals[idx];
      }
    }
    __syncthreads();  // every key is read back before the next pass places any
  }
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const std::uint32_t idx = warp_base + i * 32 + lane;
    if (i < rows && idx < m) {
      keys[begin + idx] = from_ordered_bits(k[i], kind);
      if constexpr (has_values) vals[begin + idx] = v[i];
    }
  }
}

template <class K, class V, int Items>
void launch_bucket_radix(context& ctx, const lsd_job<K, V>& job, const std::uint32_t* offsets, const int* shift) {
  allow_dynamic_shared_memory<bucket_radix_kernel<K, V, Items>>(ctx.device().ordinal, bucket_smem_bytes<K, V, Items>);
  V* vals = nullptr;
  if constexpr (!std::is_same_v<V, no_value>) vals = job.vals[0];
  bucket_radix_kernel<K, V, Items><<<hybrid_buckets, bucket_threads, bucket_smem_bytes<K, V, Items>, ctx.stream()>>>(
      job.keys[0], vals, offsets, job.begin_bit, shift, job.kind);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::detail::bucket_radix_kernel");
}

//! The hybrid sort of `job` (keys_in == keys[0], vals_in == vals[0] for pairs, first_dst == 1)
//! as `plan` (plan_hybrid, use == true) says: the result lands in keys[0] / vals[0].
template <class K, class V>
void hybrid_run_cuda(context& ctx, const lsd_job<K, V>& job, const hybrid_plan& plan, const char* function) {
  static_assert(sizeof(K) == 8, "the hybrid path is for 8-byte keys");
  constexpr bool has_values = !std::is_same_v<V, no_value>;
  require(job.keys_in == job.keys[0] && job.first_dst == 1 && job.keep_keys && job.run_if == nullptr &&
              (!has_values || job.vals_in == job.vals[0]),
          function, "keys", "internal: the hybrid sort works in place on keys[0]");
  buffer<std::uint32_t> meta(ctx, hybrid_buckets + 5);  // offsets [65537], fallback, shift, on, bad
  std::uint32_t* offsets = meta.data();
  std::uint32_t* fallback = offsets + hybrid_buckets + 1;
  int* shift = reinterpret_cast<int*>(fallback + 1);
  std::uint32_t* hybrid_on = fallback + 2;
  std::uint32_t* bad = fallback + 3;
  const std::uint32_t n = std::uint32_t(job.n);
  const bool exact = plan_exact_bins(ctx.device());
  const std::uint32_t samples = plan_samples_for(job.n, exact);
  const auto plan_on = [&](auto exact_bins) {
    constexpr bool Exact = decltype(exact_bins)::value;
    if constexpr (Exact) allow_dynamic_shared_memory<bucket_plan_kernel<K, true>>(ctx.device().ordinal, plan_smem_bytes<true>);
    bucket_plan_kernel<K, Exact><<<1, plan_threads, plan_smem_bytes<Exact>, ctx.stream()>>>(
        job.keys[0], n, samples, job.begin_bit, job.end_bit, job.kind, plan.max_bucket, shift, hybrid_on, bad);
  };
  if (exact) plan_on(std::true_type{});
  else plan_on(std::false_type{});
  CANOPY_CUDA_CHECK_LAUNCH("canopy::detail::bucket_plan_kernel");

  // Two passes over bits [*shift, *shift + 16), unless step 1 turned the hybrid off: back in
  // keys[0] / vals[0].
  lsd_job<K, V> top = job;
  top.begin_bit = 0;
  top.end_bit = hybrid_top_bits;
  top.shift_base = shift;
  top.run_if = hybrid_on;
  lsd_run_cuda(ctx, top, function);

  bucket_bounds_kernel<K><<<unsigned((std::size_t(n) + 256) / 256), 256, 0, ctx.stream()>>>(
      job.keys[0], n, shift, hybrid_on, job.end_bit, job.kind, plan.max_bucket, offsets, bad);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::detail::bucket_bounds_kernel");
  bucket_guard_kernel<<<1, guard_threads, 0, ctx.stream()>>>(offsets, hybrid_on, bad, fallback,
                                                             hybrid_testing().fallback_probe);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::detail::bucket_guard_kernel");

  const hybrid_window_less<K> comp{K(bit_range(job.begin_bit, job.end_bit)), job.kind};
  if (plan.radix_local) {
    if (plan.items == 12) launch_bucket_radix<K, V, 12>(ctx, job, offsets, shift);
    else launch_bucket_radix<K, V, 20>(ctx, job, offsets, shift);
  } else if constexpr (has_values) {
    segmented_sort_cuda<K, V, true>(function, ctx, job.keys[0], job.vals[0], job.n, offsets, hybrid_buckets, comp,
                                    offsets_check::trusted, job.keys[1], job.vals[1]);
  } else {
    segmented_sort_cuda<K, merge_no_value, false>(function, ctx, job.keys[0], static_cast<merge_no_value*>(nullptr),
                                                  job.n, offsets, hybrid_buckets, comp, offsets_check::trusted,
                                                  job.keys[1], static_cast<merge_no_value*>(nullptr));
  }

  lsd_job<K, V> rest = job;
  rest.run_if = fallback;
  lsd_run_cuda(ctx, rest, function);  // an even pass count: back in keys[0] / vals[0]
}

}  // namespace canopy::detail

#endif  // CANOPY_HAS_CUDA && __CUDACC__
