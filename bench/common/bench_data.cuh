// bench/common/bench_data.cuh — benchmark inputs and result checks that need no harness: random
// and iota fills, and the first index where two results differ. Everything runs through
// canopy::for_each, so it works on both backends: inputs are made where they are used (no host
// round trip at 2^28), results are compared in place. Used by canopy-bench (bench_util.cuh) and the
// tuning programs.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/for_each.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace canopy_bench {

//! A mixing hash of (seed, i): independent-looking 64-bit values for every index.
CANOPY_HD inline std::uint64_t mix64(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

//! A record of `Bytes` bytes (gather benchmarks). Trivially copyable, compared word by word.
template <std::size_t Bytes>
struct alignas(16) record {
  static_assert(Bytes % 16 == 0, "records are whole 16-byte vectors");
  std::uint32_t w[Bytes / 4];
};
template <std::size_t Bytes>
CANOPY_HD inline bool operator==(const record<Bytes>& a, const record<Bytes>& b) {
  for (std::size_t k = 0; k < Bytes / 4; ++k)
    if (a.w[k] != b.w[k]) return false;
  return true;
}

// How a random value of type T is made from 64 random bits. Full-width for keys; for sums the
// range is bounded so that no partial sum overflows at n <= 2^28 (|x| <= 7 for i32, < 2^31 for i64),
// and zero-free so a lost element changes the result.
template <class T>
struct random_value {
  CANOPY_HD static T make(std::uint64_t h) { return static_cast<T>(h); }
};
template <>
struct random_value<std::int32_t> {
  CANOPY_HD static std::int32_t make(std::uint64_t h) {
    const std::int32_t v = static_cast<std::int32_t>(h % 14) - 7;  // -7..6
    return v >= 0 ? v + 1 : v;                                      // -7..-1, 1..7
  }
};
template <>
struct random_value<std::int64_t> {
  CANOPY_HD static std::int64_t make(std::uint64_t h) {
    const std::int64_t v = static_cast<std::int64_t>(h >> 32) - (std::int64_t(1) << 31);
    return v == 0 ? 1 : v;
  }
};
template <std::size_t Bytes>
struct random_value<record<Bytes>> {
  CANOPY_HD static record<Bytes> make(std::uint64_t h) {
    record<Bytes> r;
    for (std::size_t k = 0; k < Bytes / 4; ++k) r.w[k] = static_cast<std::uint32_t>(mix64(h, k));
    return r;
  }
};

template <class T>
struct fill_random_fn {
  canopy::span<T> out;
  std::uint64_t seed;
  std::uint64_t mask;  // applied to the 64 random bits before conversion (e.g. 48-bit keys)
  CANOPY_HD void operator()(std::size_t i) const { out[i] = random_value<T>::make(mix64(seed, i) & mask); }
};

//! Fills `out` with random values of T (see random_value), keeping only the bits of `mask`.
template <class T>
void fill_random(canopy::context& ctx, canopy::span<T> out, std::uint64_t seed, std::uint64_t mask = ~0ull) {
  canopy::for_each(ctx, out.size(), fill_random_fn<T>{out, seed, mask});
}

template <class T>
struct iota_fn {
  canopy::span<T> out;
  CANOPY_HD void operator()(std::size_t i) const { out[i] = static_cast<T>(i); }
};
template <class T>
void fill_iota(canopy::context& ctx, canopy::span<T> out) {
  canopy::for_each(ctx, out.size(), iota_fn<T>{out});
}

template <class Ok>
struct first_failure_fn {
  Ok ok;
  unsigned long long* first;
  CANOPY_HD void operator()(std::size_t i) const {
    if (ok(i)) return;
#if CANOPY_DEVICE_PASS
    atomicMin(first, static_cast<unsigned long long>(i));
#else
    unsigned long long seen = __atomic_load_n(first, __ATOMIC_RELAXED);
    while (i < seen &&
           !__atomic_compare_exchange_n(first, &seen, static_cast<unsigned long long>(i), true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
#endif
  }
};

//! The smallest i < n with ok(i) false, or n if there is none. `ok` is a CANOPY_HD functor of the
//! index. Synchronises the context.
template <class Ok>
std::size_t first_failure(canopy::context& ctx, std::size_t n, Ok ok) {
  if (n == 0) return 0;
  canopy::buffer<unsigned long long> first(ctx, 1);
  first.fill_bytes(0xff);
  canopy::for_each(ctx, n, first_failure_fn<Ok>{ok, first.data()});
  const unsigned long long f = first.to_host()[0];
  return f == std::numeric_limits<unsigned long long>::max() ? n : static_cast<std::size_t>(f);
}

template <class T>
struct equal_at {
  canopy::span<const T> a, b;
  CANOPY_HD bool operator()(std::size_t i) const { return a[i] == b[i]; }
};

//! The first index where a and b differ, or a.size() if they are equal (sizes must match).
template <class T>
std::size_t first_mismatch(canopy::context& ctx, canopy::span<const T> a, canopy::span<const T> b) {
  if (a.size() != b.size()) return std::min(a.size(), b.size());
  return first_failure(ctx, a.size(), equal_at<T>{a, b});
}

//! Copies one element to the host (synchronises), for mismatch messages.
template <class T>
T element_at(canopy::context& ctx, canopy::span<const T> s, std::size_t i) {
  canopy::buffer<T> one(ctx, 1);
  canopy::copy(ctx, s.subspan(i, 1), one.view());
  return one.to_host()[0];
}

template <class T>
std::string describe(const T& v) {
  if constexpr (std::is_integral_v<T>) return std::to_string(v);
  else return "(record)";
}

//! The first i < n where the device arrays a and b differ, or n when they are equal (synchronises).
template <class T>
std::size_t first_difference(canopy::context& ctx, const T* a, const T* b, std::size_t n) {
  return first_mismatch(ctx, canopy::span<const T>(a, n, ctx.space()), canopy::span<const T>(b, n, ctx.space()));
}

}  // namespace canopy_bench
