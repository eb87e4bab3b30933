// canopy/core/detail/scan_tile_state.cuh — device building blocks of the single-pass scans:
// warp shuffles of any trivially copyable type, in-order warp scans, and the tile status
// descriptors with the warp-wide decoupled look-back (Merrill & Garland 2016; Yan et al. 2013).
//
// Descriptor layouts, by accumulator size (status: 0 invalid, 1 aggregate, 2 inclusive prefix):
//   <= 4 bytes: one 64-bit word, status in the high half and the value bits in the low half; one
//               relaxed 64-bit store/load publishes/reads both together.
//   <= 8 bytes: one 16-byte word {value, status}, written and read with single 128-bit accesses
//               (one transaction on sm_70+; CUB's tile state relies on the same).
//   larger:     a status word plus separate aggregate and inclusive value slots. The writer stores the
//               value, fences (__threadfence), then stores the status; the reader loads the status,
//               fences, then loads the slot that status names (the two slots keep an aggregate read
//               from being overwritten by the later inclusive value).
// In the first two layouts the status word carries the call's epoch above the two status bits
// (context::keep_tile_descriptors, detail/kept_epoch.hpp): a descriptor of another epoch reads as
// invalid, so storage kept from earlier calls needs no clearing. Epoch 0 is zeroed storage's.
#pragma once

#include <canopy/core/config.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace canopy {
namespace detail {

enum : unsigned { tile_invalid = 0, tile_aggregate = 1, tile_inclusive = 2 };

// ---------------------------------------------------------------------------------------------
// Shuffles of any trivially copyable type, 32 bits at a time.

template <class T>
struct shuffle_words {
  static constexpr int count = int((sizeof(T) + 3) / 4);
  unsigned w[count];
};

template <class T>
__device__ __forceinline__ T shfl_idx(const T& v, int src) {
  shuffle_words<T> in, out;
  memcpy(&in, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < shuffle_words<T>::count; ++i) out.w[i] = __shfl_sync(0xffffffffu, in.w[i], src);
  T r;
  memcpy(&r, &out, sizeof(T));
  return r;
}

template <class T>
__device__ __forceinline__ T shfl_up(const T& v, unsigned delta) {
  shuffle_words<T> in, out;
  memcpy(&in, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < shuffle_words<T>::count; ++i) out.w[i] = __shfl_up_sync(0xffffffffu, in.w[i], delta);
  T r;
  memcpy(&r, &out, sizeof(T));
  return r;
}

template <class T>
__device__ __forceinline__ T shfl_down(const T& v, unsigned delta) {
  shuffle_words<T> in, out;
  memcpy(&in, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < shuffle_words<T>::count; ++i) out.w[i] = __shfl_down_sync(0xffffffffu, in.w[i], delta);
  T r;
  memcpy(&r, &out, sizeof(T));
  return r;
}

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & 31u; }

//! A value of any trivially copyable type read through L2 (ld.global.cg), never from an L1 line
//! that may be stale: for data another block of the same kernel published behind a fence.
template <class T>
__device__ __forceinline__ T load_l2(const T* p) {
  if constexpr (std::is_floating_point_v<T> || (std::is_integral_v<T> && sizeof(T) >= 4)) {
    return __ldcg(p);
  } else if constexpr (sizeof(T) % 4 == 0 && alignof(T) >= 4) {
    shuffle_words<T> w;
#pragma unroll
    for (int i = 0; i < shuffle_words<T>::count; ++i) w.w[i] = __ldcg(reinterpret_cast<const unsigned*>(p) + i);
    T r;
    memcpy(&r, &w, sizeof(T));
    return r;
  } else {
    unsigned char b[sizeof(T)];
#pragma unroll
    for (std::size_t i = 0; i < sizeof(T); ++i) b[i] = reinterpret_cast<const volatile unsigned char*>(p)[i];
    T r;
    memcpy(&r, b, sizeof(T));
    return r;
  }
}

//! Inclusive scan across the 32 lanes of a warp in lane order (op(lower lane, higher lane)).
template <class T, class Op>
__device__ __forceinline__ T warp_inclusive_scan(T v, const Op& op) {
  const unsigned lane = lane_id();
#pragma unroll
  for (unsigned d = 1; d < 32; d <<= 1) {
    const T other = shfl_up(v, d);
    if (lane >= d) v = op(other, v);
  }
  return v;
}

//! Reduction of lanes [lane, last] in lane order, valid in lane 0 when last >= 0 (lanes past `last`
//! do not contribute). Lower lanes are later elements when `reversed` (look-back windows).
template <class T, class Op>
__device__ __forceinline__ T warp_reduce_reversed(T v, unsigned last, const Op& op) {
  const unsigned lane = lane_id();
#pragma unroll
  for (unsigned d = 1; d < 32; d <<= 1) {
    const T other = shfl_down(v, d);
    if (lane + d <= last) v = op(other, v);  // lane + d holds earlier tiles
  }
  return v;
}

//! `p` = p op x where either may be absent (no identity is needed for inclusive scans).
template <class T, class Op>
__device__ __forceinline__ void combine_optional(bool& has_p, T& p, bool has_x, const T& x, const Op& op) {
  if (has_x) {
    p = has_p ? op(p, x) : x;
    has_p = true;
  }
}

// ---------------------------------------------------------------------------------------------
// Tile status descriptors.

template <class Acc, int Layout = (sizeof(Acc) <= 4 ? 0 : (sizeof(Acc) <= 8 ? 1 : 2))>
struct tile_status;

template <class Acc>
struct tile_status<Acc, 0> {
  using word = unsigned long long;
  static constexpr std::size_t bytes_per_tile = sizeof(word);
  word* words;
  unsigned epoch;

  __host__ __device__ explicit tile_status(void* storage, unsigned epoch_ = 0)
      : words(static_cast<word*>(storage)), epoch(epoch_) {}
  __device__ void publish(std::size_t tile, unsigned status, const Acc& v) const {
    unsigned bits = 0;
    memcpy(&bits, &v, sizeof(Acc));
    const word w = (word(status | (epoch << 2)) << 32) | bits;
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(words + tile), "l"(w) : "memory");
  }
  __device__ unsigned read(std::size_t tile, Acc& v) const {
    word w;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"(words + tile) : "memory");
    const unsigned bits = unsigned(w);
    memcpy(&v, &bits, sizeof(Acc));
    const unsigned tag = unsigned(w >> 32);
    return (tag >> 2) == epoch ? (tag & 3u) : unsigned(tile_invalid);
  }
};

template <class Acc>
struct tile_status<Acc, 1> {
  static constexpr std::size_t bytes_per_tile = 16;
  unsigned long long* words;
  unsigned epoch;

  __host__ __device__ explicit tile_status(void* storage, unsigned epoch_ = 0)
      : words(static_cast<unsigned long long*>(storage)), epoch(epoch_) {}
  __device__ void publish(std::size_t tile, unsigned status, const Acc& v) const {
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof(Acc));
    const unsigned long long s = status | (unsigned long long)(epoch) << 2;
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(words + 2 * tile), "l"(bits), "l"(s)
                 : "memory");
  }
  __device__ unsigned read(std::size_t tile, Acc& v) const {
    unsigned long long bits, s;
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(bits), "=l"(s) : "l"(words + 2 * tile)
                 : "memory");
    memcpy(&v, &bits, sizeof(Acc));
    return (s >> 2) == epoch ? unsigned(s & 3u) : unsigned(tile_invalid);
  }
};

template <class Acc>
struct tile_status<Acc, 2> {
  static constexpr std::size_t value_words = (sizeof(Acc) + 3) / 4;
  //! status word + aggregate slot + inclusive slot.
  static constexpr std::size_t bytes_per_tile = 4 + 8 * value_words;
  unsigned* base;  // layout: [status x tiles][aggregate slots][inclusive slots], set by the constructor
  std::size_t tiles;

  __host__ __device__ tile_status(void* storage, std::size_t tile_count)
      : base(static_cast<unsigned*>(storage)), tiles(tile_count) {}
  __device__ unsigned* slot(std::size_t tile, unsigned status) const {
    return base + tiles + (status == tile_inclusive ? tiles * value_words : 0) + tile * value_words;
  }
  __device__ void publish(std::size_t tile, unsigned status, const Acc& v) const {
    unsigned w[value_words] = {};
    memcpy(w, &v, sizeof(Acc));
    unsigned* s = slot(tile, status);
#pragma unroll
    for (std::size_t i = 0; i < value_words; ++i) __stcg(s + i, w[i]);
    __threadfence();
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(base + tile), "r"(status) : "memory");
  }
  __device__ unsigned read(std::size_t tile, Acc& v) const {
    unsigned status;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(status) : "l"(base + tile) : "memory");
    if (status != tile_invalid) {
      __threadfence();
      const unsigned* s = slot(tile, status);
      unsigned w[value_words];
#pragma unroll
      for (std::size_t i = 0; i < value_words; ++i) w[i] = __ldcg(s + i);
      memcpy(&v, w, sizeof(Acc));
    }
    return status;
  }
};

//! Bytes of descriptor storage for `tiles` tiles (zeroed before the scan kernel runs, or kept
//! with epochs: tile_status_keeps_epochs).
template <class Acc>
constexpr std::size_t tile_status_bytes(std::size_t tiles) {
  return tile_status<Acc>::bytes_per_tile * tiles;
}

//! Whether Acc's descriptors carry an epoch (8- and 16-byte layouts); the larger layout needs
//! zeroed storage (epoch 0).
template <class Acc>
constexpr bool tile_status_keeps_epochs() {
  return sizeof(Acc) <= 8;
}

template <class Acc>
__device__ __forceinline__ tile_status<Acc> make_tile_status(void* storage, std::size_t tiles, unsigned epoch) {
  if constexpr (tile_status_keeps_epochs<Acc>()) {
    (void)tiles;
    return tile_status<Acc>(storage, epoch);
  } else {
    (void)epoch;
    return tile_status<Acc>(storage, tiles);
  }
}

//! Called by one whole warp for tile `tile` > 0 after the tile published its aggregate: returns the
//! combination of all earlier tiles (in every lane). Each step reads a window of 32 x PerLane
//! predecessors in one round trip (lane l holds tiles pred - l*PerLane - k, k < PerLane, so lower
//! lanes and lower k are later tiles) and stops at the nearest inclusive prefix. Tile 0 always
//! publishes an inclusive prefix, so the walk ends.
//! Why PerLane > 1: the distance back to the nearest inclusive prefix grows with the number of tiles
//! in flight (hundreds on a large GPU); each window costs an L2 round trip, and a longer look-back
//! keeps more tiles in flight, which lengthens the distance again. Wider windows break that loop.
//! `polls` (diagnostics, may be null) counts the window reads.
template <class Acc, int PerLane = 1, unsigned MaxBackoff = 256, class Op, class Status>
__device__ Acc warp_look_back(const Status& status, std::size_t tile, const Op& op, unsigned* polls = nullptr) {
  static_assert(PerLane >= 1 && PerLane <= 8, "1..8 descriptors per lane");
  const unsigned lane = lane_id();
  Acc prefix{};
  bool has_prefix = false;
  long long pred = static_cast<long long>(tile) - 1;
  unsigned backoff = 8;
  while (true) {
    Acc v[PerLane];
    unsigned first_inclusive;  // k of this lane's nearest inclusive descriptor, PerLane if none
    unsigned inclusive_mask, limit_mask;
    while (true) {
      unsigned s[PerLane];
      if (polls != nullptr) ++*polls;
#pragma unroll
      for (int k = 0; k < PerLane; ++k) {
        const long long idx = pred - static_cast<long long>(lane) * PerLane - k;
        v[k] = Acc{};
        s[k] = idx >= 0 ? status.read(std::size_t(idx), v[k]) : tile_inclusive;  // before tile 0: never counts
      }
      first_inclusive = PerLane;
      bool invalid = false;  // an invalid descriptor at or before this lane's nearest inclusive one
#pragma unroll
      for (int k = PerLane - 1; k >= 0; --k)
        if (s[k] == tile_inclusive) first_inclusive = unsigned(k);
#pragma unroll
      for (int k = 0; k < PerLane; ++k)
        if (unsigned(k) <= first_inclusive && s[k] == tile_invalid) invalid = true;
      inclusive_mask = __ballot_sync(0xffffffffu, first_inclusive < unsigned(PerLane));
      const unsigned invalid_mask = __ballot_sync(0xffffffffu, invalid);
      // Lanes up to and including the nearest inclusive one matter.
      limit_mask = inclusive_mask ? ((inclusive_mask & (0u - inclusive_mask)) << 1) - 1u : 0xffffffffu;
      if ((invalid_mask & limit_mask) == 0) break;
      if constexpr (MaxBackoff > 0) {
        __nanosleep(backoff);
        backoff = backoff < MaxBackoff ? backoff * 2 : backoff;
      }
    }
    // This lane's descriptors, earliest first, down to its nearest inclusive one.
    Acc lane_value = v[0];
#pragma unroll
    for (int k = 1; k < PerLane; ++k)
      if (unsigned(k) <= first_inclusive) lane_value = op(v[k], lane_value);
    const unsigned last = inclusive_mask ? unsigned(__ffs(inclusive_mask) - 1) : 31u;
    const Acc window = shfl_idx(warp_reduce_reversed(lane_value, last, op), 0);
    prefix = has_prefix ? op(window, prefix) : window;
    has_prefix = true;
    if (inclusive_mask) return prefix;
    pred -= 32 * PerLane;
  }
}

}  // namespace detail
}  // namespace canopy

#endif
