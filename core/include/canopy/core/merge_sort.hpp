// canopy/core/merge_sort.hpp — stable comparison sort of keys, or of keys with values.
//
//   canopy::merge_sort_keys(ctx, keys, canopy::less<float>{});
//   canopy::merge_sort_pairs(ctx, keys, values, my_order{});   // my_order: CANOPY_HD strict weak order
//
// CUDA: a thread-block sort of tiles in registers and a conflict-free shared-memory layout, then
// merge passes that split the output by merge path (a binary search along each diagonal), each
// thread producing a fixed number of outputs; loads and stores go through shared memory so that
// global traffic is coalesced. Host: sorted chunks in parallel (oneTBB), then parallel pairwise
// merges. Kernels: detail/merge_kernels.cuh; launch sequence: detail/merge_dispatch.cuh.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/span.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace canopy {

#ifndef CANOPY_HAS_LESS
#define CANOPY_HAS_LESS 1
//! a < b with the built-in operator. For floats this is IEEE order: -0.0 and +0.0 are equivalent
//! (a stable sort keeps their input order), -inf and +inf sort first and last. NaN makes `<` no strict
//! weak ordering: sorting NaNs with canopy::less is the caller's error; the sort then stays inside
//! its buffers and terminates, but the output is unspecified (it need not be a permutation).
template <class T>
struct less {
  CANOPY_HD constexpr bool operator()(const T& a, const T& b) const { return a < b; }
};
//! a > b with the built-in operator (descending order); same caveats as canopy::less.
template <class T>
struct greater {
  CANOPY_HD constexpr bool operator()(const T& a, const T& b) const { return b < a; }
};
#endif

namespace detail {
[[noreturn]] void throw_cuda_from_host_compiler(const char* function);
}  // namespace detail

}  // namespace canopy

#include <canopy/core/detail/merge_host.cuh>
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#include <canopy/core/detail/merge_dispatch.cuh>
#endif

namespace canopy {

//! Sorts `keys` in place into ascending order by `comp`, stably (equivalent keys keep their input
//! order).
//!
//! `comp(a, b)` returns true when a goes before b; it must be a strict weak ordering (the caller's
//! duty: with NaN under canopy::less the output is unspecified, though memory-safe).
//! On the CUDA backend it must be callable on the device (CANOPY_HD), and the call must be compiled
//! by nvcc, except for the instantiations the library ships (keys std::uint32_t, std::int32_t,
//! float, std::uint64_t with canopy::less; values std::uint32_t), which link from host code.
//! Key and Value: trivially copyable, sizeof(Key) + sizeof(Value) <= 160 bytes.
//!
//! Stability: stable API. Complexity: O(n log n) comparisons; on CUDA ceil(log2(n / tile)) merge
//! passes over the data after one tile-sort pass (tile = 11776 items for 4-byte keys, 2816 for
//! 8-byte key + value).
//! Temporary memory from ctx.resource(): n keys (+ n values for pairs), a sample index of every
//! 256th key for the split searches (CUDA: about n/256 keys) and a few bytes per tile.
//! Asynchronous on the CUDA backend (no synchronisation); blocking on the host backend.
//! Throws invalid_argument for a null span of non-zero size or a span in the wrong memory space.
template <class Key, class Comp>
void merge_sort_keys(context& ctx, span<Key> keys, Comp comp);

//! As merge_sort_keys, and applies the same permutation to `values` (values.size() == keys.size()).
template <class Key, class Value, class Comp>
void merge_sort_pairs(context& ctx, span<Key> keys, span<Value> values, Comp comp);

// ---------------------------------------------------------------------------------------------
// Definitions

namespace detail {
template <class Key, class Value>
void merge_sort_static_checks() {
  static_assert(std::is_trivially_copyable_v<Key>, "canopy::merge_sort: Key must be trivially copyable");
  static_assert(std::is_trivially_copyable_v<Value>, "canopy::merge_sort: Value must be trivially copyable");
  static_assert(sizeof(Key) + sizeof(Value) <= 160, "canopy::merge_sort: key + value larger than 160 bytes");
}
struct merge_no_value {};
}  // namespace detail

template <class Key, class Comp>
void merge_sort_keys(context& ctx, span<Key> keys, Comp comp) {
  detail::merge_sort_static_checks<Key, char>();
  static_assert(!std::is_const_v<Key>, "canopy::merge_sort_keys: keys must be writable");
  check_span(keys, ctx.space(), "canopy::merge_sort_keys", "keys");
  if (keys.size() < 2) return;
  if (ctx.is_cuda()) {
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
    detail::merge_sort_cuda<Key, detail::merge_no_value, false>(ctx, keys.data(), nullptr, keys.size(), comp);
#else
    detail::throw_cuda_from_host_compiler("canopy::merge_sort_keys");
#endif
    return;
  }
  detail::merge_sort_host<Key, detail::merge_no_value, false>(ctx, keys.data(), nullptr, keys.size(), comp);
}

template <class Key, class Value, class Comp>
void merge_sort_pairs(context& ctx, span<Key> keys, span<Value> values, Comp comp) {
  detail::merge_sort_static_checks<Key, Value>();
  static_assert(!std::is_const_v<Key> && !std::is_const_v<Value>, "canopy::merge_sort_pairs: spans must be writable");
  check_span(keys, ctx.space(), "canopy::merge_sort_pairs", "keys");
  check_span(values, ctx.space(), "canopy::merge_sort_pairs", "values");
  require(values.size() == keys.size(), "canopy::merge_sort_pairs", "values",
          "length " + std::to_string(values.size()) + " differs from keys length " + std::to_string(keys.size()));
  if (keys.size() < 2) return;
  if (ctx.is_cuda()) {
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
    detail::merge_sort_cuda<Key, Value, true>(ctx, keys.data(), values.data(), keys.size(), comp);
#else
    detail::throw_cuda_from_host_compiler("canopy::merge_sort_pairs");
#endif
    return;
  }
  detail::merge_sort_host<Key, Value, true>(ctx, keys.data(), values.data(), keys.size(), comp);
}

// The instantiations in core/src/merge_sort.cu, so that host-compiled callers reach the kernels.
#define CANOPY_MERGE_SORT_EXTERN(K)                                                              \
  extern template void merge_sort_keys<K, less<K>>(context&, span<K>, less<K>);                  \
  extern template void merge_sort_pairs<K, std::uint32_t, less<K>>(context&, span<K>, span<std::uint32_t>, less<K>);
CANOPY_MERGE_SORT_EXTERN(std::uint32_t)
CANOPY_MERGE_SORT_EXTERN(std::int32_t)
CANOPY_MERGE_SORT_EXTERN(float)
CANOPY_MERGE_SORT_EXTERN(std::uint64_t)
#undef CANOPY_MERGE_SORT_EXTERN

}  // namespace canopy
