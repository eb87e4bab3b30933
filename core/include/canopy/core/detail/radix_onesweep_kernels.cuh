// canopy/core/detail/radix_onesweep_kernels.cuh — the CUDA kernels of split and LSD radix sort.
//
// Onesweep structure (after Adinets & Merrill 2022), one kernel per pass of an 8-, 9- or 10-bit
// digit (wider digits: fewer passes over 8-byte keys; see digit_layout and radix_engine.cuh):
//   1. digit_histogram_kernel: one read of the keys (16-byte vectors) counts the digits of
//      *every* pass at once; digit_offsets_kernel turns each pass's counts into exclusive global
//      bin offsets.
//   2. onesweep_pass_kernel, per tile of 384 x items records (shape per record width in
//      radix_engine.cuh; shared memory is dynamic, so tiles are not capped at 48 KiB):
//      - tile ids come from an atomic counter, so tile t only waits on tiles that already run;
//      - keys are held as their order-preserving bits, so a digit is a shift and a mask;
//      - early counts: each warp counts its digits with shared atomics, the block sums them and
//        publishes the tile's per-digit counts at once (flag AGGREGATE), before ranking;
//      - warp-level ranking: each warp takes its keys in position order (item i, then lane),
//        groups equal digits with one ballot per digit bit; the lowest lane of a group adds the
//        group's size to the warp's running offset of that digit (shared atomic) and broadcasts
//        the old value; rank = that value + peers on lower lanes (stable);
//      - 256 threads, one to four digits each, look back over earlier tiles' words for their
//        digits, eight tiles per read (one with variant::narrow_look_back, which pairs take),
//        until an INCLUSIVE prefix, then publish their own inclusive prefix (decoupled look-back
//        over digit bins);
//      - each warp places its records in shared memory in split order as soon as it has ranked
//        them (the exchange buffers do not alias the counters), then the block writes them out
//        so that each digit's run leaves the block contiguously (coalesced). Five barriers per
//        tile, keys only or pairs (six for pairs with variant::stage_values).
//   Every pass (and the offsets kernel) starts with dependent_launch_trigger_and_wait: on sm_90
//   they are launched with programmatic dependent launch (radix_engine.cuh).
//   Shapes (items per thread, blocks per SM, variant) are chosen per device class in
//   radix_engine.cuh.
// Look-back words pack a 2-bit flag over a 30-bit count, hence n < 2^30 per call.
#pragma once

#include <canopy/core/detail/dependent_launch.cuh>
#include <canopy/core/detail/split_host.cuh>
#include <canopy/core/key_traits.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace canopy::detail::onesweep {

constexpr int radix = 256;  //!< bins of an 8-bit digit: split's digit, and every pass of 4-byte keys

//! Where a pass kernel of `Bits`-bit digits (8, 9 or 10) keeps its per-warp digit counters, and
//! how its 256 scan threads share the digits. 8-bit digits take one 32-bit counter each. Wider
//! digits take two 16-bit counters per 32-bit word (a counter never exceeds the tile size, at most
//! 65535, so a packed add never carries into the other half), which keeps a 10-bit pass's counters
//! at 24 KiB (12 warps) instead of 48. Scan thread t owns counter words k*256 + t (k < word_span),
//! each holding `per_word` consecutive digits, so digits are scanned in the order (k, t, half).
template <int Bits>
struct digit_layout {
  static_assert(Bits >= 8 && Bits <= 10, "pass kernels take 8- to 10-bit digits");
  static constexpr int bins = 1 << Bits;
  static constexpr bool packed = Bits > 8;
  static constexpr int per_word = packed ? 2 : 1;
  static constexpr int words = bins / per_word;  //!< counter words per warp
  static constexpr int scan_threads = 256;
  static constexpr int word_span = words / scan_threads;  //!< counter words per scan thread: 1 or 2
  static constexpr int digits_per_thread = word_span * per_word;
  //! The counter word of digit d, and what adds one to d's counter there.
  static constexpr __host__ __device__ std::uint32_t word_of(std::uint32_t d) { return packed ? d >> 1 : d; }
  static constexpr __host__ __device__ std::uint32_t one_of(std::uint32_t d) { return packed ? 1u << ((d & 1u) * 16) : 1u; }
  //! Digit d's counter in its word (half h = d & 1 when packed).
  static constexpr __host__ __device__ std::uint32_t counter_of(std::uint32_t word, std::uint32_t d) {
    return packed ? (word >> ((d & 1u) * 16)) & 0xffffu : word;
  }
};

//! Kernel variants beyond the tile shape (template argument `Variant` of onesweep_pass_kernel); 0
//! is the kernel every H200 measurement in docs/performance/sort.md ran. Tried on the H100 and
//! removed (sort.md, runs 9-10): evict-first loads (2-4% slower), values staged into a buffer of
//! their own and placed as their keys are ranked (no faster than stage_values); round 4: 4-byte
//! pairs packed into one 8-byte record per key (2-7% slower), L2 prefetch of the tile one wave
//! ahead (8-25% slower), persistent blocks that claim their next tile during the look-back (3-17%
//! slower).
namespace variant {
//! Pairs: each thread starts copying its tile's values into the value exchange buffer (cp.async,
//! no registers) right after the tile id is known, so the value loads overlap the key ranking
//! instead of following it; after ranking each thread reads back its own values and, after one
//! more block barrier, places them. Index variants (values = positions) are unaffected.
constexpr int stage_values = 1;
//! The look-back reads one predecessor's word per digit at a time instead of eight (a window of
//! eight tiles per round trip). On the H100 the eight-word windows cost the 16-byte-record passes
//! 3-5% (L2 requests that a tile mostly does not need: its nearest predecessor usually holds an
//! inclusive prefix or is about to), while u32 keys alone (8-byte records) gain from them and so
//! do u64 keys on the H200 (docs/performance/sort.md, session 8). The defaults take it for pairs
//! with 4-byte values (radix_engine.cuh, onesweep_default).
constexpr int narrow_look_back = 2;
}  // namespace variant

//! Tile shape: 384 threads x `items` per thread; shared memory is dynamic (per-warp digit
//! counters, the key exchange buffer and, for pairs, the value exchange buffer, side by side), so
//! tiles are not capped by the 48 KiB static limit. `min_blocks` is the register hint of
//! __launch_bounds__; `Bits` the digit width of the kernel (digit_layout).
template <class K, class V, int Items, int MinBlocks, int Bits = 8>
struct shape {
  static constexpr bool has_values = !std::is_same_v<V, no_value>;
  static constexpr int threads = 384;
  static constexpr int items = Items;
  static constexpr int min_blocks = MinBlocks;
  static constexpr int tile = threads * items;
  static constexpr int warps = threads / 32;
  static constexpr std::size_t counter_bytes = std::size_t(warps) * digit_layout<Bits>::words * 4;
  static_assert(tile <= 65535 || Bits == 8, "packed 16-bit digit counters hold at most 65535 slots");
  static constexpr std::size_t key_bytes = std::size_t(tile) * sizeof(K);
  static constexpr std::size_t value_bytes = has_values ? std::size_t(tile) * sizeof(V) : 0;
  static constexpr std::size_t smem_bytes = counter_bytes + key_bytes + value_bytes;
  //! The kernel's static shared arrays (s_delta: 4 B per bin; s_warp_sums, s_tile: at most 68 B;
  //! ptxas reports 1072 B for 8-bit digits on sm_90), rounded up.
  static constexpr std::size_t static_bytes = std::size_t(digit_layout<Bits>::bins) * 4 + 128;
  //! Dynamic plus static: what the device's per-block opt-in limit must hold.
  static constexpr std::size_t block_bytes = smem_bytes + static_bytes;
};

constexpr int max_passes = 8;

//! The digits of an LSD run: pass p splits on bits [shift[p], shift[p] + bits[p]). Its histogram
//! and each tile's look-back row have bins[p] = 2^max(8, bits[p]) words, pass p's starting at word
//! offset[p] (histogram) or tiles * offset[p] (look-back). Made by make_digit_plan (radix_engine.cuh).
struct digit_plan {
  int passes = 0;
  int shift[max_passes] = {};
  int bits[max_passes] = {};
  int bins[max_passes] = {};
  int offset[max_passes] = {};
  int total_bins = 0;
};
//! Bins of all passes together: eight 8-bit passes (2048), or at most seven of 9-10 bits (a plan
//! of wide digits is only taken when it has fewer passes than 8-bit digits would).
constexpr int max_plan_bins = (max_passes - 1) * 1024;

}  // namespace canopy::detail::onesweep

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy::detail::onesweep {
constexpr std::uint32_t flag_aggregate = 1u << 30;
constexpr std::uint32_t flag_inclusive = 2u << 30;
constexpr std::uint32_t value_mask = (1u << 30) - 1;
constexpr std::uint32_t max_elements = value_mask;  // counts must fit the 30-bit field

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
  //! Non-null: the pass does nothing unless *run_if != 0 (a device word written by an earlier
  //! kernel on the stream: the hybrid sort's fallback, radix_hybrid.cuh).
  const std::uint32_t* run_if = nullptr;
  //! Non-null: the digit is taken at shift + *shift_base (a device word: the hybrid sort places
  //! its bucket digits where the keys' bits vary, radix_hybrid.cuh). Whole-key kernels of 8-byte
  //! keys only (pass_kernels::launch picks them for such passes).
  const int* shift_base = nullptr;
};

//! Whether a kernel gated by `run_if` (null: always) is to run. Read by every thread, so no
//! barrier is skipped by part of a block.
__device__ __forceinline__ bool gated_off(const std::uint32_t* run_if) { return run_if != nullptr && *run_if == 0u; }

//! Zeroes words [0, count) when `run_if` says so: the state clear of a gated LSD run (a memset
//! cannot depend on device data).
static __global__ void clear_words_kernel(std::uint32_t* words, std::size_t count, const std::uint32_t* run_if) {
  if (gated_off(run_if)) return;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x)
    words[i] = 0u;
}

__device__ __forceinline__ std::uint32_t load_relaxed(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_relaxed(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

//! Inclusive sum of x over lanes 0..lane of the (full) warp.
__device__ __forceinline__ std::uint32_t warp_inclusive_sum(std::uint32_t x) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const std::uint32_t v = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += v;
  }
  return x;
}

//! Lanes of the warp whose digit equals d (d < 2^Bits): one ballot per digit bit, which is
//! cheaper than __match_any_sync on sm_70..sm_90 (8 bits: 1.3x per sort on an H200). Written in
//! PTX so that each bit is five instructions (bit test, vote, predicated complement, mask); the
//! C++ form was seven PTX instructions per bit (docs/performance/sort.md, run 5).
template <int Bits>
__device__ __forceinline__ std::uint32_t match_digit(std::uint32_t d) {
  std::uint32_t peers = 0xffffffffu;
#pragma unroll
  for (int b = 0; b < Bits; ++b) {
    asm("{\n\t"
        ".reg .pred on;\n\t"
        ".reg .b32 votes;\n\t"
        "and.b32 votes, %1, %2;\n\t"
        "setp.ne.u32 on, votes, 0;\n\t"
        "vote.sync.ballot.b32 votes, on, 0xffffffff;\n\t"
        "@!on not.b32 votes, votes;\n\t"
        "and.b32 %0, %0, votes;\n\t"
        "}"
        : "+r"(peers)
        : "r"(d), "r"(1u << b));
  }
  return peers;
}

//! cp.async of one 4- or 8-byte element from global to shared memory. cp.async exists from sm_80
//! on; older targets (sm_70, sm_75) take a plain load and store, which the copying thread sees at
//! once, so copy_async_wait_all has nothing to wait for there (each thread reads back only what
//! it copied itself; other threads' copies are ordered by the block barriers as before).
template <class T>
__device__ __forceinline__ void copy_async(T* shared_dst, const T* global_src) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cp.async.ca copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(dst), "l"(global_src), "n"(int(sizeof(T)))
               : "memory");
#else
  *shared_dst = *global_src;
#endif
}
__device__ __forceinline__ void copy_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

//! Which part of an ordered key holds a pass's digit: the whole key (any shift), or for 8-byte
//! keys only its low or high 32-bit word (the digit does not straddle bit 32; the shift is then
//! relative to that word), so the digit is a 32-bit shift and a mask instead of a variable 64-bit
//! shift. Chosen per pass on the host.
enum class digit_word : int { whole = 0, low = 1, high = 2 };

template <digit_word W = digit_word::whole, class K>
__device__ __forceinline__ std::uint32_t digit_of(K ordered, int shift, std::uint32_t mask) {
  if constexpr (sizeof(K) == 8 && W == digit_word::low) return (std::uint32_t(ordered) >> shift) & mask;
  else if constexpr (sizeof(K) == 8 && W == digit_word::high) return (std::uint32_t(ordered >> 32) >> shift) & mask;
  else return std::uint32_t(ordered >> shift) & mask;
}

//! One LSD pass of a `Bits`-bit digit (8 to 10) over one tile per block. Keys travel in registers and shared memory as
//! their order-preserving bits (converted once on load and once on store), so a digit is a shift
//! and a mask. The slots of a partial last tile hold the all-ones key: it has the largest digit
//! and the highest positions, so it ranks after every real key and its shared slots are the
//! tile's last ones, which are never written out (only that tile's own counts include them, and
//! no later tile reads them).
template <class K, class V, int Items, int MinBlocks, digit_word W = digit_word::whole, int Variant = 0, int Bits = 8>
__global__ void __launch_bounds__(384, MinBlocks) onesweep_pass_kernel(pass_args<K, V> a) {
  using S = shape<K, V, Items, MinBlocks, Bits>;
  using L = digit_layout<Bits>;
  constexpr int bins = L::bins;
  constexpr int threads = S::threads, items = S::items, tile_size = S::tile, warps = S::warps;
  constexpr bool has_values = S::has_values;
  constexpr bool stage = has_values && (Variant & variant::stage_values) != 0;
  extern __shared__ __align__(16) unsigned char dyn_smem[];
  std::uint32_t* counters = reinterpret_cast<std::uint32_t*>(dyn_smem);  // [warps][L::words]
  K* s_keys = reinterpret_cast<K*>(dyn_smem + S::counter_bytes);
  V* s_vals = reinterpret_cast<V*>(dyn_smem + S::counter_bytes + S::key_bytes);  // pairs only
  __shared__ std::uint32_t s_delta[bins];  // global output slot of a digit's run minus its tile slot
  __shared__ std::uint32_t s_warp_sums[L::word_span][L::scan_threads / 32];
  __shared__ std::uint32_t s_tile;

  dependent_launch_trigger_and_wait();
  if (gated_off(a.run_if)) return;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) s_tile = atomicAdd(a.tile_counter, 1u);
  for (int i = tid; i < warps * L::words; i += threads) counters[i] = 0;
  __syncthreads();
  const std::uint32_t tile = s_tile;
  const std::uint32_t tile_base = tile * tile_size;
  const std::uint32_t tile_n = min(std::uint32_t(tile_size), a.n - tile_base);
  const bool full_tile = tile_n == std::uint32_t(tile_size);
  // Only whole-key kernels of 8-byte keys take digits placed on the device (the hybrid sort's);
  // every other kernel compiles without the extra load and add (they cost spills in the word
  // kernels, ptxas sm_90).
  int shift = a.shift;
  if constexpr (sizeof(K) == 8 && W == digit_word::whole) {
    if (a.shift_base != nullptr) shift += *a.shift_base;
  }
  const std::uint32_t mask = a.mask;

  // Warp-striped load: warp w owns positions [w*items*32, (w+1)*items*32) of the tile.
  const std::uint32_t warp_base = tile_base + std::uint32_t(warp) * items * 32;
  // Staged values sit in the value buffer at their tile position (the same warp-striped index),
  // so each thread later reads back exactly the elements it copied.
  V* const staged = s_vals + warp * items * 32 + lane;
  if constexpr (stage) {
    if (a.vals_in) {
#pragma unroll
      for (int i = 0; i < items; ++i) {
        const std::uint32_t idx = warp_base + i * 32 + lane;
        if (full_tile || idx < a.n) copy_async(staged + i * 32, a.vals_in + idx);
      }
    }
  }
  K keys[items];
  if (full_tile) {
#pragma unroll
    for (int i = 0; i < items; ++i) keys[i] = a.keys_in[warp_base + i * 32 + lane];
  } else {
#pragma unroll
    for (int i = 0; i < items; ++i) {
      const std::uint32_t idx = warp_base + i * 32 + lane;
      keys[i] = idx < a.n ? a.keys_in[idx] : K(0);
    }
  }
  // The key kind is uniform: one branch per tile, not a select per key.
  if (a.kind == key_kind::signed_integer) {
#pragma unroll
    for (int i = 0; i < items; ++i) keys[i] = to_ordered_bits(keys[i], key_kind::signed_integer);
  } else if (a.kind == key_kind::floating_point) {
#pragma unroll
    for (int i = 0; i < items; ++i) keys[i] = to_ordered_bits(keys[i], key_kind::floating_point);
  }
  if (!full_tile) {
#pragma unroll
    for (int i = 0; i < items; ++i)
      if (warp_base + i * 32 + lane >= a.n) keys[i] = K(~K(0));
  }

  // Early counts: per-warp digit counts by shared atomics first, so the tile's aggregate is
  // published before the (serial) ranking; ranking then starts from each warp's final offsets.
  std::uint32_t* my_counts = counters + warp * L::words;
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const std::uint32_t d = digit_of<W>(keys[i], shift, mask);
    atomicAdd(&my_counts[L::word_of(d)], L::one_of(d));
  }
  __syncthreads();
  // Scan threads: thread t owns counter words k*256 + t; a word's counters (one, or two packed
  // halves) are summed over warps in place, word-wise (halves never carry).
  constexpr int span = L::word_span;
  const bool scanner = tid < L::scan_threads;
  std::uint32_t count_word[span], total[span], inclusive[span];
  if (scanner) {
#pragma unroll
    for (int k = 0; k < span; ++k) {
      const int wi = k * L::scan_threads + tid;
      std::uint32_t running = 0;
#pragma unroll
      for (int w = 0; w < warps; ++w) {  // in place: count of (w, d) -> warps before w's count of d
        const std::uint32_t c = counters[w * L::words + wi];
        counters[w * L::words + wi] = running;
        running += c;
      }
      count_word[k] = running;
#pragma unroll
      for (int h = 0; h < L::per_word; ++h) {
        const std::uint32_t d = std::uint32_t(wi * L::per_word + h);
        store_relaxed(a.lookback + std::size_t(tile) * bins + d,
                      (tile == 0 ? flag_inclusive : flag_aggregate) | L::counter_of(running, d));
      }
      total[k] = L::packed ? (running & 0xffffu) + (running >> 16) : running;
      inclusive[k] = warp_inclusive_sum(total[k]);
      if (lane == 31) s_warp_sums[k][warp] = inclusive[k];
    }
  }
  __syncthreads();
  std::uint32_t start_word[span];  // the tile slot where each of this thread's digits starts (packed like the counters)
  if (scanner) {
    // A runtime loop, not an unrolled one: the keys are live here, and eight loads in flight at
    // once made the 8-byte-key kernels spill (ptxas, sm_90).
    std::uint32_t base = 0;  // digits of earlier word blocks (k < this k) in the tile
#pragma unroll
    for (int k = 0; k < span; ++k) {
      std::uint32_t start = base + inclusive[k] - total[k];
      for (int w = 0; w < warp; ++w) start += s_warp_sums[k][w];
      if (k + 1 < span)
        for (int w = 0; w < L::scan_threads / 32; ++w) base += s_warp_sums[k][w];
      start_word[k] = L::packed ? start | ((start + (count_word[k] & 0xffffu)) << 16) : start;
#pragma unroll
      for (int w = 0; w < warps; ++w) counters[w * L::words + k * L::scan_threads + tid] += start_word[k];
    }
  }
  __syncthreads();

  // Stable warp ranking in position order (item i, then lane): equal digits grouped by ballots;
  // the group's lowest lane adds the group's size to the warp's running offset of that digit.
  // Keys only: each key is placed as soon as it is ranked (its slot is final: the counters start
  // from the early counts), so no array of slots is live across the loop (one register per item
  // fewer). Pairs keep the slots for the values, which are loaded after the keys are placed.
  constexpr bool place_early = !has_values;
  std::uint32_t pos[place_early ? 1 : items];
  const std::uint32_t lanes_below = (1u << lane) - 1u;
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const std::uint32_t d = digit_of<W>(keys[i], shift, mask);
    const std::uint32_t peers = match_digit<Bits>(d);
    const int leader = __ffs(peers) - 1;
    std::uint32_t before = 0;
    if (lane == leader)
      before = L::counter_of(atomicAdd(&my_counts[L::word_of(d)], L::one_of(d) * std::uint32_t(__popc(peers))), d);
    const std::uint32_t slot = __shfl_sync(0xffffffffu, before, leader) + __popc(peers & lanes_below);
    if constexpr (place_early) s_keys[slot] = keys[i];
    else pos[i] = slot;
    __syncwarp();  // item i+1's counter update must follow item i's, whichever lanes lead them
  }
  // The exchange buffers do not alias the counters: each warp places its records as soon as it
  // has ranked them, while warps 0-7 also walk the look-back.
  if constexpr (!place_early) {
#pragma unroll
    for (int i = 0; i < items; ++i) s_keys[pos[i]] = keys[i];
  }
  if constexpr (has_values) {
    __syncwarp();  // keeps the value loads after the key stores: keys[] is dead before vals[] lives
    V vals[items];
    if constexpr (stage) {
      if (a.vals_in) copy_async_wait_all();
#pragma unroll
      for (int i = 0; i < items; ++i) {
        const std::uint32_t idx = warp_base + i * 32 + lane;
        vals[i] = (full_tile || idx < a.n) ? (a.vals_in ? staged[i * 32] : V(idx)) : V(0);
      }
      __syncthreads();  // every staged value is read back before any placement overwrites it
    } else {
#pragma unroll
      for (int i = 0; i < items; ++i) {
        const std::uint32_t idx = warp_base + i * 32 + lane;
        vals[i] = (full_tile || idx < a.n) ? (a.vals_in ? a.vals_in[idx] : V(idx)) : V(0);
      }
    }
#pragma unroll
    for (int i = 0; i < items; ++i) s_vals[pos[i]] = vals[i];
  }
  if (scanner) {
    // Windowed look-back, all of this thread's digits at once: the words of `window` predecessors
    // are read together, so a walk over many aggregate-only tiles costs one memory latency per
    // window, not per tile, and a thread with several digits waits once for all of them (one
    // predecessor per read with variant::narrow_look_back).
    constexpr int digits = L::digits_per_thread;
    constexpr int window = (Variant & variant::narrow_look_back) != 0 ? 1 : 8;
    std::uint32_t prefix[digits];
    int j[digits];
    bool done[digits];
#pragma unroll
    for (int q = 0; q < digits; ++q) prefix[q] = 0, j[q] = int(tile) - 1, done[q] = tile == 0;
    const auto digit_q = [&](int q) {  // q = k * per_word + h
      return std::uint32_t(((q / L::per_word) * L::scan_threads + tid) * L::per_word + q % L::per_word);
    };
    bool all_done = tile == 0;
    while (!all_done) {
      std::uint32_t v[digits][window];
#pragma unroll
      for (int q = 0; q < digits; ++q)
#pragma unroll
        for (int w = 0; w < window; ++w)
          v[q][w] = !done[q] && j[q] - w >= 0 ? load_relaxed(a.lookback + std::size_t(j[q] - w) * bins + digit_q(q))
                                              : flag_inclusive;
      all_done = true;
#pragma unroll
      for (int q = 0; q < digits; ++q) {
#pragma unroll
        for (int w = 0; w < window; ++w) {
          if (done[q] || (v[q][w] & ~value_mask) == 0) break;  // found the prefix, or tile j-w has not published
          prefix[q] += v[q][w] & value_mask;
          --j[q];
          if (v[q][w] & flag_inclusive) done[q] = true;
        }
        all_done = all_done && done[q];
      }
    }
#pragma unroll
    for (int q = 0; q < digits; ++q) {
      const std::uint32_t d = digit_q(q);
      const int k = q / L::per_word;
      const std::uint32_t count = L::counter_of(count_word[k], d), start = L::counter_of(start_word[k], d);
      if (tile > 0) store_relaxed(a.lookback + std::size_t(tile) * bins + d, flag_inclusive | (prefix[q] + count));
      s_delta[d] = a.digit_offsets[d] + prefix[q] - start;
    }
  }
  __syncthreads();

  // Each digit's run leaves the block contiguously (coalesced writes). One copy of the loop per
  // key kind (and one writing no keys), chosen once per tile.
  const auto write_out = [&](auto write_keys, auto kind) {
#pragma unroll
    for (int k = 0; k < items; ++k) {
      const std::uint32_t j = tid + k * threads;
      if (full_tile || j < tile_n) {
        const K key = s_keys[j];
        const std::uint32_t slot = s_delta[digit_of<W>(key, shift, mask)] + j;
        if constexpr (decltype(write_keys)::value) a.keys_out[slot] = from_ordered_bits(key, decltype(kind)::value);
        if constexpr (has_values) a.vals_out[slot] = s_vals[j];
      }
    }
  };
  using yes = std::true_type;
  using unsigned_kind = std::integral_constant<key_kind, key_kind::unsigned_integer>;
  if (has_values && !a.keys_out) write_out(std::false_type{}, unsigned_kind{});
  else if (a.kind == key_kind::signed_integer)
    write_out(yes{}, std::integral_constant<key_kind, key_kind::signed_integer>{});
  else if (a.kind == key_kind::floating_point)
    write_out(yes{}, std::integral_constant<key_kind, key_kind::floating_point>{});
  else
    write_out(yes{}, unsigned_kind{});
}

//! Counts the digits of every pass of `plan` for every key into hist[plan.offset[p] + digit]
//! (zeroed before). Keys are read as 16-byte vectors, `hist_vectors` per thread per step, each
//! vector of the step a grid-stride apart (so every load of the warp is coalesced and all of a
//! step's loads are in flight before the first count). A vector whose keys share a pass's digit
//! adds its count in one shared atomic, so sorted or constant inputs serialise less on one
//! counter. The few keys before the first 16-byte boundary and after the last whole vector are
//! counted one by one by block 0.
constexpr int hist_threads = 256;
constexpr int hist_vectors = 4;
__device__ __forceinline__ void unpack(const uint4& r, std::uint32_t (&k)[4]) {
  k[0] = r.x, k[1] = r.y, k[2] = r.z, k[3] = r.w;
}
__device__ __forceinline__ void unpack(const uint4& r, std::uint64_t (&k)[2]) {
  k[0] = (std::uint64_t(r.y) << 32) | r.x;
  k[1] = (std::uint64_t(r.w) << 32) | r.z;
}

template <class K>
__device__ __forceinline__ void count_digits(std::uint32_t* s_hist, const K (&k)[16 / sizeof(K)], int count,
                                             const digit_plan& plan, key_kind kind) {
  constexpr int per = 16 / sizeof(K);
  K ordered[per];
#pragma unroll
  for (int i = 0; i < per; ++i) ordered[i] = to_ordered_bits(k[i], kind);
#pragma unroll
  for (int p = 0; p < max_passes; ++p) {
    if (p < plan.passes) {
      const int shift = plan.shift[p];
      const std::uint32_t mask = (1u << plan.bits[p]) - 1u;
      std::uint32_t* h = s_hist + plan.offset[p];
      std::uint32_t d[per];
      bool same = count == per;
#pragma unroll
      for (int i = 0; i < per; ++i) {
        d[i] = std::uint32_t(ordered[i] >> shift) & mask;
        same = same && d[i] == d[0];
      }
      if (same) {
        atomicAdd(&h[d[0]], std::uint32_t(per));
      } else {
#pragma unroll
        for (int i = 0; i < per; ++i)
          if (i < count) atomicAdd(&h[d[i]], 1u);
      }
    }
  }
}

template <class K>
__global__ void __launch_bounds__(hist_threads) digit_histogram_kernel(const K* keys, std::uint32_t n, digit_plan plan,
                                                                       key_kind kind, std::uint32_t* hist,
                                                                       const std::uint32_t* run_if,
                                                                       const int* shift_base) {
  if (gated_off(run_if)) return;
  if (shift_base != nullptr) {
    const int base = *shift_base;
#pragma unroll
    for (int p = 0; p < max_passes; ++p) plan.shift[p] += base;
  }
  constexpr int per = 16 / sizeof(K);
  __shared__ std::uint32_t s_hist[max_plan_bins];
  for (int i = threadIdx.x; i < plan.total_bins; i += blockDim.x) s_hist[i] = 0;
  __syncthreads();
  const std::size_t misalign = reinterpret_cast<std::uintptr_t>(keys) & 15u;
  const std::uint32_t head = min(n, std::uint32_t(((16 - misalign) & 15u) / sizeof(K)));
  const std::uint32_t vectors = (n - head) / per;
  const std::uint32_t tail_begin = head + vectors * per;
  const uint4* vec = reinterpret_cast<const uint4*>(keys + head);
  const std::uint32_t stride = gridDim.x * blockDim.x;
  for (std::uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < vectors; v += hist_vectors * stride) {
    uint4 r[hist_vectors];
#pragma unroll
    for (int u = 0; u < hist_vectors; ++u)
      if (v + u * stride < vectors) r[u] = vec[v + u * stride];
#pragma unroll
    for (int u = 0; u < hist_vectors; ++u) {
      if (v + u * stride < vectors) {
        K k[per];
        unpack(r[u], k);
        count_digits(s_hist, k, per, plan, kind);
      }
    }
  }
  if (blockIdx.x == 0) {
    // At most per-1 keys before the first boundary and per-1 after the last vector.
    const std::uint32_t i = threadIdx.x < head ? threadIdx.x : tail_begin + (threadIdx.x - head);
    if (threadIdx.x < 2 * per && i < n && (threadIdx.x < head || i >= tail_begin)) {
      K k[per] = {};
      k[0] = keys[i];
      count_digits(s_hist, k, 1, plan, kind);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < plan.total_bins; i += blockDim.x)
    if (s_hist[i]) atomicAdd(&hist[i], s_hist[i]);
}

//! In place, one block per pass: pass p's digit counts -> exclusive digit offsets (a block scan
//! over up to 1024 bins).
constexpr int offsets_threads = 1024;
static __global__ void __launch_bounds__(offsets_threads) digit_offsets_kernel(std::uint32_t* hist, digit_plan plan,
                                                                                      const std::uint32_t* run_if) {
  dependent_launch_trigger_and_wait();
  if (gated_off(run_if)) return;
  __shared__ std::uint32_t s_warp[offsets_threads / 32];
  const int p = blockIdx.x, t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int bins = plan.bins[p];
  std::uint32_t* h = hist + plan.offset[p];
  const std::uint32_t c = t < bins ? h[t] : 0u;
  const std::uint32_t inclusive = warp_inclusive_sum(c);
  if (lane == 31) s_warp[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const std::uint32_t w = warp_inclusive_sum(s_warp[lane]);
    s_warp[lane] = w;
  }
  __syncthreads();
  if (t < bins) h[t] = inclusive - c + (warp > 0 ? s_warp[warp - 1] : 0u);
}

}  // namespace canopy::detail::onesweep

#endif
