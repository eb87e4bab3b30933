// canopy/core/detail/radix_engine.cuh — the LSD driver shared by split, radix sort and the index
// variants, for both backends.
//
// Keys travel as raw bits (uint32_t/uint64_t; floats and signed integers reinterpreted), values as
// uint32_t/uint64_t or no_value. Pass p of P = lsd_passes(begin, end) splits on bits
// [begin + 8p, min(begin + 8p + 8, end)) on both backends. (lsd_run_cuda_shaped also takes digits
// of up to 10 bits, fewer passes for 8-byte keys, for canopy-radix-tuning and the tests: they lost
// on the H100, docs/performance/sort.md, session 5.) Pass 0 reads the caller's input; pass p writes
// buffer (first_dst + p) & 1 and pass p+1 reads it, so the caller chooses where the result lands.
// Included by the .cu sources only.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/error.hpp>
#include <canopy/core/for_each.hpp>
#include <canopy/core/detail/dependent_launch.cuh>
#include <canopy/core/detail/overlap.hpp>
#include <canopy/core/detail/radix_onesweep_kernels.cuh>
#include <canopy/core/detail/split_host.cuh>

#include <algorithm>
#include <mutex>
#include <string>
#include <type_traits>

namespace canopy::detail {

template <class K, class V>
struct lsd_job {
  const K* keys_in = nullptr;
  K* keys[2] = {nullptr, nullptr};
  const V* vals_in = nullptr;  //!< null: values are the input positions (index variants)
  V* vals[2] = {nullptr, nullptr};
  std::size_t n = 0;
  int begin_bit = 0;
  int end_bit = 0;
  key_kind kind = key_kind::unsigned_integer;
  int first_dst = 0;
  bool keep_keys = true;  //!< false: the last pass need not write keys
  //! CUDA only. Non-null: every kernel of the run does nothing unless *run_if != 0 at the time it
  //! runs (a device word set by earlier work on the stream); the look-back state is then cleared
  //! by a kernel under the same condition instead of a memset. Used by the hybrid sort's fallback
  //! (radix_hybrid.cuh), which must not synchronise to learn whether it is needed.
  const std::uint32_t* run_if = nullptr;
  //! CUDA only. Non-null: every digit is taken *shift_base bits higher than the plan of
  //! [begin_bit, end_bit) says (a device word; the caller keeps the digits inside the key).
  const int* shift_base = nullptr;
};

//! The digits of an LSD run over bits [begin_bit, end_bit) with digits of at most `max_bits` (8 to
//! 10): 8-bit digits (the last one narrower) unless wider ones need fewer passes; then the bits are
//! shared out as evenly as possible, the wider digits first. 64 bits at up to 10: 10 + 6 x 9, seven
//! passes instead of eight; 48 bits: 3 x 10 + 2 x 9, five instead of six; 32 bits stay 4 x 8.
inline onesweep::digit_plan make_digit_plan(int begin_bit, int end_bit, int max_bits) {
  onesweep::digit_plan plan;
  const int width = end_bit - begin_bit;
  if (width <= 0) return plan;
  const int narrow = (width + 7) / 8;
  const int wide = max_bits > 8 ? (width + max_bits - 1) / max_bits : narrow;
  plan.passes = std::min(narrow, wide);
  int shift = begin_bit;
  for (int p = 0; p < plan.passes; ++p) {
    const int bits = plan.passes == narrow ? std::min(8, end_bit - shift)
                                           : width / plan.passes + (p < width % plan.passes ? 1 : 0);
    plan.shift[p] = shift;
    plan.bits[p] = bits;
    plan.bins[p] = 1 << std::max(8, bits);
    plan.offset[p] = plan.total_bins;
    plan.total_bins += plan.bins[p];
    shift += bits;
  }
  return plan;
}

//! Passes of an LSD run with 8-bit digits: what lsd_run makes on both backends.
inline int lsd_passes(int begin_bit, int end_bit) { return make_digit_plan(begin_bit, end_bit, 8).passes; }

inline void check_bit_range(int begin_bit, int end_bit, int key_bits, const char* function) {
  require(begin_bit >= 0 && begin_bit <= key_bits, function, "begin_bit",
          "must lie in [0, " + std::to_string(key_bits) + "], got " + std::to_string(begin_bit));
  require(end_bit >= begin_bit && end_bit <= key_bits, function, "end_bit",
          "must lie in [begin_bit = " + std::to_string(begin_bit) + ", " + std::to_string(key_bits) + "], got " +
              std::to_string(end_bit));
}

//! Peak DRAM bandwidth per SM per SM clock cycle, in bytes: the balance between what a pass kernel
//! can compute and what it can move. H200: 4.9 TB/s / (132 SMs x 1.98 GHz) = 18.8; H100 SXM:
//! 3.35 TB/s / (132 x 1.98 GHz) = 12.8. 0 where the device did not report its clocks.
inline double memory_bytes_per_sm_clock(const device_info& d) {
  if (d.memory_bandwidth <= 0 || d.clock_khz <= 0 || d.multiprocessors <= 0) return 0;
  return d.memory_bandwidth / (double(d.multiprocessors) * d.clock_khz * 1e3);
}

//! The two device classes the onesweep shapes were swept on (docs/performance/sort.md). Below 16
//! bytes per SM clock (H100: 12.8) a pass moves its bytes slower than it ranks them, so it is
//! bandwidth-bound; at or above (H200: 18.8), or unknown, it is bound by its ranking and barriers.
enum class onesweep_regime { compute_bound, bandwidth_bound };
constexpr double onesweep_bandwidth_bound_below = 16.0;

inline onesweep_regime onesweep_regime_of(const device_info& d) {
  const double b = memory_bytes_per_sm_clock(d);
  return b > 0 && b < onesweep_bandwidth_bound_below ? onesweep_regime::bandwidth_bound
                                                     : onesweep_regime::compute_bound;
}

//! Tile shape per record width and device class: items per thread, blocks per SM as the register
//! hint (three blocks of 384 threads: 56 registers; two: 80), and the kernel variant
//! (onesweep::variant). Swept at 2^26 and 2^28 (docs/performance/sort.md):
//! - compute_bound, on an H200: u32 keys 26 items x 3 blocks (of 16-26), u32/u32 pairs 24x2 (of
//!   16-26), u64 keys 16x3 (of 12-20), u64/u32 pairs 18x2 (of 12-20);
//! - bandwidth_bound, on an H100 (round 3): u32 keys 30x3 (of 16-40), u64 keys 26x2 (of 10-28:
//!   larger tiles at two blocks beat 16x3 by 4-8% there), u64/u32 pairs 18x2 as on the H200 (of
//!   14-18, staged or not).
//! Session 8 (both cards): pairs with 4-byte values read their look-back one predecessor at a time
//! (variant::narrow_look_back; H100 +3-5%, H200 +0.5-2%); u32/u32 pairs then take 26x2 unstaged on
//! both (canopy-radix-tuning: H100 1.012 / 1.109, H200 1.141 / 1.151 against CUB, of 20-26 staged
//! or not; canopy-bench on the H200: 1.111 / 1.115 against 1.105 / 1.106 before). u32 keys keep
//! 26x3 on the H200: 32x3 measured 1.225 / 1.216 against 1.184 / 1.170 in canopy-radix-tuning but
//! no faster in canopy-bench (1.172 / 1.167). Keys alone keep the window:
//! u32 keys lose 2.5-3.5% without it on both cards, u64 keys 5% on the H200, and on the H100 the
//! 2% that LSD runs of u64 keys gained came with 1% lost by the hybrid sort (its whole-key pass
//! kernel spills 28 bytes instead of 8).
//! Pairs with 8-byte values were not measured on either; they take 16x2 with the look-back window.
template <class K, class V, onesweep_regime R = onesweep_regime::compute_bound>
struct onesweep_default {
  static constexpr bool keys_only = std::is_same_v<V, no_value>;
  static constexpr bool four_byte = sizeof(K) == 4 && (keys_only || sizeof(V) == 4);
  static constexpr bool bandwidth_bound = R == onesweep_regime::bandwidth_bound;
  static constexpr int items = keys_only   ? (sizeof(K) == 4 ? (bandwidth_bound ? 30 : 26) : (bandwidth_bound ? 26 : 16))
                               : four_byte ? 26
                               : sizeof(V) == 4 ? 18
                                                : 16;
  static constexpr int min_blocks = keys_only && !(bandwidth_bound && sizeof(K) == 8) ? 3 : 2;
  //! One look-back predecessor a read: pairs with 4-byte values.
  static constexpr bool narrow = !keys_only && sizeof(V) == 4;
  static constexpr int variant = narrow ? onesweep::variant::narrow_look_back : 0;
  //! 8-bit digits on both classes. Digits of up to 10 bits (seven passes for 64-bit keys, five for
  //! 48-bit) were measured on the H100 at 2^26 and 2^28 and lost: a 9-bit pass costs about 10% more
  //! than an 8-bit one and a 10-bit pass about 40% more, so 64-bit keys broke even and 48-bit keys
  //! and u64/u32 pairs got 6-15% slower (docs/performance/sort.md, session 5). canopy-radix-tuning
  //! sweeps them (shapes labelled digits<=10).
  static constexpr std::size_t block_bytes = onesweep::shape<K, V, items, min_blocks>::block_bytes;
};

//! The fallback shape of a record type for devices whose per-block shared memory cannot hold the
//! class's default: the largest tile whose block takes at most 48 KiB, which every CUDA device
//! allows without opting in (sm_75 allows 64 KiB opted in, sm_86/sm_89 99 KiB, against 90-108 KiB
//! that some defaults take). Two blocks per SM as the register hint, variant 0.
template <class K, class V>
struct onesweep_compact {
  static constexpr std::size_t guaranteed_bytes = 48 * 1024;
  static constexpr std::size_t record_bytes = sizeof(K) + (std::is_same_v<V, no_value> ? 0 : sizeof(V));
  using probe = onesweep::shape<K, V, 1, 2>;
  static constexpr int items =
      int((guaranteed_bytes - probe::counter_bytes - probe::static_bytes) / (std::size_t(probe::threads) * record_bytes));
  static constexpr int min_blocks = 2;
  static constexpr int variant = 0;
  static_assert(items >= 1 && onesweep::shape<K, V, items, min_blocks>::block_bytes <= guaranteed_bytes);
};

//! Which of a record type's shapes a device runs: its class's default, or the compact fallback.
enum class onesweep_fit { class_default, compact };

//! The shared memory a block may take on `d`: its opt-in limit, or 48 KiB (the limit every device
//! allows) where the context did not report one.
inline std::size_t onesweep_shared_memory_limit(const device_info& d) {
  return d.shared_memory_per_block_optin ? d.shared_memory_per_block_optin : std::size_t(48 * 1024);
}

//! Refuses, with canopy::error naming both numbers, a tile whose block needs more shared memory
//! than `d` allows.
inline void check_onesweep_shared_memory(const device_info& d, std::size_t block_bytes, const char* function) {
  const std::size_t limit = onesweep_shared_memory_limit(d);
  if (block_bytes > limit)
    throw error(std::string(function) + ": the radix pass kernel's tile needs " + std::to_string(block_bytes) +
                " bytes of shared memory per block, but device '" + d.name + "' allows " + std::to_string(limit) +
                " (shared_memory_per_block_optin)");
}

//! The shape that device `d` runs for records (K, V): the default of its class (onesweep_regime_of)
//! when that fits the device's per-block shared memory, else the compact one; canopy::error when
//! neither fits. Host-only arithmetic on the context's device facts (no driver call).
template <class K, class V>
onesweep_fit onesweep_fit_of(const device_info& d, const char* function) {
  const std::size_t default_bytes =
      onesweep_regime_of(d) == onesweep_regime::bandwidth_bound
          ? onesweep_default<K, V, onesweep_regime::bandwidth_bound>::block_bytes
          : onesweep_default<K, V, onesweep_regime::compute_bound>::block_bytes;
  if (default_bytes <= onesweep_shared_memory_limit(d)) return onesweep_fit::class_default;
  using C = onesweep_compact<K, V>;
  check_onesweep_shared_memory(d, onesweep::shape<K, V, C::items, C::min_blocks>::block_bytes, function);
  return onesweep_fit::compact;
}

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
//! Sets the opt-in dynamic shared memory limit of `Kernel` to `bytes`, once per device (a
//! host-side attribute of the device's primary context, no sync; thread-safe). Ordinals past the
//! 64th set it on every call. For the pass kernels and the hybrid sort's kernels (radix_hybrid.cuh).
template <auto Kernel>
void allow_dynamic_shared_memory(int device, std::size_t bytes) {
  constexpr int tracked = 64;
  static std::once_flag once[tracked];
  const auto set = [bytes] {
    CANOPY_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  };
  if (device >= 0 && device < tracked) std::call_once(once[device], set);
  else set();
}

//! The pass kernels of one digit width: the whole-key kernel and, for 8-byte keys only, the ones
//! reading one 32-bit word of the key (onesweep::digit_word), with their shared memory allowed.
template <class K, class V, int Items, int MinBlocks, int Variant, int Bits>
struct pass_kernels {
  using kernel_t = void (*)(onesweep::pass_args<K, V>);
  //! 8-byte keys, keys only: a pass whose digit lies in one 32-bit word of the key runs the kernel
  //! that reads only that word (a 32-bit shift and mask per digit instead of a variable 64-bit
  //! shift). Pairs keep one kernel: measured no change for u64/u32 pairs (docs/performance/sort.md).
  static constexpr bool words = sizeof(K) == 8 && std::is_same_v<V, no_value>;
  static constexpr std::size_t smem_bytes = onesweep::shape<K, V, Items, MinBlocks, Bits>::smem_bytes;
  kernel_t whole, low, high;
  explicit pass_kernels(int device) {
    using onesweep::digit_word;
    constexpr auto whole_kernel = onesweep::onesweep_pass_kernel<K, V, Items, MinBlocks, digit_word::whole, Variant, Bits>;
    whole = low = high = whole_kernel;
    // Tiles above 48 KiB of shared memory need the opt-in limit.
    allow_dynamic_shared_memory<whole_kernel>(device, smem_bytes);
    if constexpr (words) {
      constexpr auto low_kernel = onesweep::onesweep_pass_kernel<K, V, Items, MinBlocks, digit_word::low, Variant, Bits>;
      constexpr auto high_kernel = onesweep::onesweep_pass_kernel<K, V, Items, MinBlocks, digit_word::high, Variant, Bits>;
      low = low_kernel;
      high = high_kernel;
      allow_dynamic_shared_memory<low_kernel>(device, smem_bytes);
      allow_dynamic_shared_memory<high_kernel>(device, smem_bytes);
    }
  }
  //! Launches pass `a` (its shift relative to the whole key) on the kernel for its digit's word;
  //! a digit placed on the device (shift_base) may lie anywhere, so it takes the whole-key kernel.
  //! `pdl`: with programmatic dependent launch (the kernel waits for the previous one itself).
  void launch(onesweep::pass_args<K, V> a, int bits, unsigned tiles, cudaStream_t stream, bool pdl) const {
    kernel_t kernel = whole;
    if (words && a.shift_base == nullptr && a.shift >= 32) kernel = high, a.shift -= 32;
    else if (words && a.shift_base == nullptr && a.shift + bits <= 32) kernel = low;
    launch_dependent(pdl, kernel, tiles, unsigned(onesweep::shape<K, V, Items, MinBlocks, Bits>::threads), smem_bytes,
                     stream, "canopy::detail::onesweep::onesweep_pass_kernel", a);
  }
};

template <class K, class V, int Items, int MinBlocks, int Variant = 0, int MaxBits = 8>
void lsd_run_cuda_shaped(context& ctx, const lsd_job<K, V>& job) {
  namespace os = onesweep;
  static_assert(MaxBits >= 8 && MaxBits <= 10, "digits of 8 to 10 bits");
  using S = os::shape<K, V, Items, MinBlocks, MaxBits>;  // the widest kernel: the most shared memory
  check_onesweep_shared_memory(ctx.device(), S::block_bytes, "canopy::detail::lsd_run_cuda_shaped");
  const os::digit_plan plan = make_digit_plan(job.begin_bit, job.end_bit, MaxBits);
  const std::uint32_t n = std::uint32_t(job.n);
  const std::size_t tiles = (job.n + S::tile - 1) / S::tile;
  // Layout: hist/offsets [total_bins], tile counters [passes] (padded to 32), look-back
  // [tiles][total_bins] (pass p's rows at tiles * offset[p]); one memset (or, for a gated run,
  // one gated kernel) clears all of it.
  const std::size_t hist_words = std::size_t(plan.total_bins);
  const std::size_t counter_words = 32 * ((plan.passes + 31) / 32);
  const std::size_t lookback_words = tiles * std::size_t(plan.total_bins);
  buffer<std::uint32_t> state(ctx, hist_words + counter_words + lookback_words);
  std::uint32_t* hist = state.data();
  std::uint32_t* counters = hist + hist_words;
  std::uint32_t* lookback = counters + counter_words;
  const int sms = std::max(ctx.device().multiprocessors, 1);
  if (job.run_if == nullptr) {
    CANOPY_CUDA_CHECK(cudaMemsetAsync(state.data(), 0, state.size() * 4, ctx.stream()));
  } else {
    const std::size_t blocks = std::min<std::size_t>((state.size() + 255) / 256, std::size_t(sms) * 8);
    os::clear_words_kernel<<<unsigned(blocks), 256, 0, ctx.stream()>>>(state.data(), state.size(), job.run_if);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::detail::onesweep::clear_words_kernel");
  }
  // At most four blocks per SM (all resident at 48 registers); each thread takes hist_vectors 16-byte vectors per step.
  const std::size_t hist_keys_per_block = std::size_t(os::hist_threads) * os::hist_vectors * (16 / sizeof(K));
  const unsigned hist_blocks =
      unsigned(std::max<std::size_t>(1, std::min<std::size_t>((job.n + hist_keys_per_block - 1) / hist_keys_per_block, std::size_t(sms) * 4)));
  os::digit_histogram_kernel<K><<<hist_blocks, os::hist_threads, 0, ctx.stream()>>>(job.keys_in, n, plan, job.kind, hist,
                                                                                   job.run_if, job.shift_base);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::detail::onesweep::digit_histogram_kernel");
  // sm_90: the offsets kernel and every pass are launched with programmatic dependent launch, so
  // each is scheduled while its predecessor runs its last tiles (H100: 0.5-1% at 2^26, session 8).
  const bool pdl = ctx.device().compute_capability_major >= 9;
  launch_dependent(pdl, os::digit_offsets_kernel, unsigned(plan.passes), unsigned(os::offsets_threads), 0, ctx.stream(),
                   "canopy::detail::onesweep::digit_offsets_kernel", hist, plan, job.run_if);

  const int device = ctx.device().ordinal;
  const pass_kernels<K, V, Items, MinBlocks, Variant, 8> eight_bit(device);
  for (int p = 0; p < plan.passes; ++p) {
    const int src = (job.first_dst + p + 1) & 1, dst = (job.first_dst + p) & 1;
    os::pass_args<K, V> a;
    a.keys_in = p == 0 ? job.keys_in : job.keys[src];
    a.keys_out = (p == plan.passes - 1 && !job.keep_keys) ? nullptr : job.keys[dst];
    if constexpr (!std::is_same_v<V, no_value>) {
      a.vals_in = p == 0 ? job.vals_in : job.vals[src];
      a.vals_out = job.vals[dst];
    } else {
      a.vals_in = nullptr;
      a.vals_out = nullptr;
    }
    a.n = n;
    a.shift = plan.shift[p];
    a.mask = (1u << plan.bits[p]) - 1u;
    a.kind = job.kind;
    a.digit_offsets = hist + plan.offset[p];
    a.lookback = lookback + tiles * std::size_t(plan.offset[p]);
    a.tile_counter = counters + p;
    a.run_if = job.run_if;
    a.shift_base = job.shift_base;
    const int bits = plan.bits[p];
    if constexpr (MaxBits >= 9) {
      if (bits == 9) {
        const pass_kernels<K, V, Items, MinBlocks, Variant, 9> k9(device);
        k9.launch(a, bits, unsigned(tiles), ctx.stream(), pdl);
        continue;
      }
    }
    if constexpr (MaxBits >= 10) {
      if (bits == 10) {
        const pass_kernels<K, V, Items, MinBlocks, Variant, 10> k10(device);
        k10.launch(a, bits, unsigned(tiles), ctx.stream(), pdl);
        continue;
      }
    }
    eight_bit.launch(a, bits, unsigned(tiles), ctx.stream(), pdl);
  }
}

template <class K, class V>
void lsd_run_cuda(context& ctx, const lsd_job<K, V>& job, const char* function) {
  require(job.n <= onesweep::max_elements, function, "keys",
          "the CUDA backend sorts fewer than 2^30 elements per call, got " + std::to_string(job.n));
  // The device class and its shared memory limit are properties the context queried once (no call
  // here reaches the driver).
  if (onesweep_fit_of<K, V>(ctx.device(), function) == onesweep_fit::compact) {
    using C = onesweep_compact<K, V>;
    lsd_run_cuda_shaped<K, V, C::items, C::min_blocks, C::variant>(ctx, job);
  } else if (onesweep_regime_of(ctx.device()) == onesweep_regime::bandwidth_bound) {
    using D = onesweep_default<K, V, onesweep_regime::bandwidth_bound>;
    lsd_run_cuda_shaped<K, V, D::items, D::min_blocks, D::variant>(ctx, job);
  } else {
    using D = onesweep_default<K, V, onesweep_regime::compute_bound>;
    lsd_run_cuda_shaped<K, V, D::items, D::min_blocks, D::variant>(ctx, job);
  }
}
#endif

//! Runs the passes of `job` on ctx's backend. n == 0 or an empty bit range does nothing.
template <class K, class V>
void lsd_run(context& ctx, const lsd_job<K, V>& job, const char* function) {
  // The CUDA pass kernel of a keys-only job always writes keys: only pairs may drop them.
  if constexpr (std::is_same_v<V, no_value>) require(job.keep_keys, function, "keys", "internal: a keys-only job must keep its keys");
  if (job.n == 0 || job.end_bit <= job.begin_bit) return;
  require((job.run_if == nullptr && job.shift_base == nullptr) || ctx.is_cuda(), function, "keys",
          "internal: gated or shifted LSD runs are CUDA only");
  if (ctx.is_cuda()) {
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
    lsd_run_cuda(ctx, job, function);
#else
    throw_cuda_from_host_compiler(function);
#endif
    return;
  }
  const onesweep::digit_plan plan = make_digit_plan(job.begin_bit, job.end_bit, 8);  // the CUDA runs' passes
  for (int p = 0; p < plan.passes; ++p) {
    const int src = (job.first_dst + p + 1) & 1, dst = (job.first_dst + p) & 1;
    const K* kin = p == 0 ? job.keys_in : job.keys[src];
    K* kout = (p == plan.passes - 1 && !job.keep_keys) ? nullptr : job.keys[dst];
    if constexpr (!std::is_same_v<V, no_value>)
      host_split_pass<K, V>(kin, kout, p == 0 ? job.vals_in : job.vals[src], job.vals[dst], job.n, plan.shift[p],
                            plan.bits[p], job.kind);
    else
      host_split_pass<K, V>(kin, kout, nullptr, nullptr, job.n, plan.shift[p], plan.bits[p], job.kind);
  }
}

}  // namespace canopy::detail

namespace canopy::detail {

//! The unsigned integer a value of type Value travels as (4- and 8-byte values only).
template <class Value>
using raw_value_t = std::conditional_t<sizeof(Value) == 4, std::uint32_t, std::uint64_t>;

}  // namespace canopy::detail
