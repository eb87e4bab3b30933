// canopy/core/segmented_sort.hpp — stable sort of many independent segments of one array.
//
//   // segment s is keys[offsets[s], offsets[s + 1])
//   canopy::segmented_sort_keys(ctx, keys, offsets, canopy::less<std::uint32_t>{});
//
// Made for the per-node work of tree builds: many small segments. CUDA: segments are binned by
// size; tiny segments are sorted by a few lanes of a warp, small ones by a warp, medium ones by a
// thread block in shared memory (all through the group sort of detail/merge_kernels.cuh), and
// segments larger than one block's tile by a thread block that sorts tiles and merges them by merge
// path through a temporary copy. Host: std::stable_sort per segment, oneTBB over segments.
#pragma once

#include <canopy/core/merge_sort.hpp>

#include <cstdint>
#include <string>

namespace canopy {

//! Whether segmented sort checks the offsets.
enum class offsets_check : std::uint8_t {
  //! Refuse offsets that decrease or pass keys.size(). On the CUDA backend this reads a few words
  //! back from the device (the check's result and the size-bin counts, which then size each bin's
  //! grid exactly) and so synchronises the context's stream once.
  full,
  //! No check and no synchronisation (per-frame use). Offsets are still clamped to [0, keys.size()],
  //! so bad offsets cannot make the sort touch memory outside keys/values, but what bad segments hold
  //! afterwards is unspecified (overlapping segments are sorted concurrently). Each size bin's grid is
  //! then sized by a bound (keys.size() / smallest size of the bin), so blocks that find no segment
  //! cost a little time when most segments fall in one bin.
  trusted,
};

}  // namespace canopy

#include <canopy/core/detail/segsort_host.cuh>
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#include <canopy/core/detail/segsort_dispatch.cuh>
#endif

namespace canopy {

//! Sorts every segment of `keys` in place, ascending by `comp`, stably. Segment s is
//! [offsets[s], offsets[s + 1]); offsets has num_segments + 1 entries, non-decreasing, with
//! offsets[num_segments] <= keys.size(). Keys outside [offsets[0], offsets[num_segments]) are left
//! untouched. An empty offsets span means no segment.
//!
//! `comp`: a strict weak ordering, as for merge_sort_keys (device-callable on CUDA; calls with
//! other comparators than the shipped canopy::less instantiations for std::uint32_t, std::int32_t,
//! float, std::uint64_t keys must be compiled by nvcc). The order is comp's, also for arithmetic
//! keys (no radix order: -0.0 and +0.0 are equivalent floats and keep their input order).
//!
//! Stability: stable API. Complexity: O(m log m) per segment of m keys. CUDA: segments of up to
//! 4352 keys (4-8 byte key + value) are sorted each in one pass through shared memory; larger
//! segments each by one thread block in ceil(log2(m / 4352)) extra passes — for a few very large
//! segments, merge_sort over each segment is faster.
//! Temporary memory from ctx.resource(): about 5 bytes per segment, plus one copy of keys (and
//! values) when keys.size() exceeds one block's tile.
//! Asynchronous on CUDA with offsets_check::trusted; offsets_check::full (the default) synchronises
//! the stream once. Throws invalid_argument for null spans, spans in the wrong memory space, and,
//! with offsets_check::full, offsets that decrease or pass keys.size().
template <class Key, class Comp>
void segmented_sort_keys(context& ctx, span<Key> keys, span<const std::uint32_t> offsets, Comp comp,
                         offsets_check check = offsets_check::full);

//! As segmented_sort_keys, and applies the same permutation to `values` (values.size() == keys.size()).
template <class Key, class Value, class Comp>
void segmented_sort_pairs(context& ctx, span<Key> keys, span<Value> values, span<const std::uint32_t> offsets,
                          Comp comp, offsets_check check = offsets_check::full);

// ---------------------------------------------------------------------------------------------
// Definitions

namespace detail {
template <class Key, class Value, bool HasValues, class Comp>
void segmented_sort_dispatch(const char* function, context& ctx, span<Key> keys, Value* values,
                             span<const std::uint32_t> offsets, Comp comp, offsets_check check) {
  merge_sort_static_checks<Key, Value>();
  check_span(keys, ctx.space(), function, "keys");
  check_span(offsets, ctx.space(), function, "offsets");
  require(keys.size() <= std::size_t(UINT32_MAX), function, "keys",
          "length " + std::to_string(keys.size()) + " exceeds the 32-bit offsets' range");
  if (offsets.size() < 2) return;  // no segment
  if (ctx.is_cuda()) {
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
    segmented_sort_cuda<Key, Value, HasValues>(function, ctx, keys.data(), values, keys.size(), offsets.data(),
                                               offsets.size() - 1, comp, check);
#else
    (void)values;
    (void)comp;
    (void)check;
    throw_cuda_from_host_compiler(function);
#endif
    return;
  }
  segmented_sort_host<Key, Value, HasValues>(function, ctx, keys.data(), values, keys.size(), offsets.data(),
                                             offsets.size() - 1, comp, check);
}
}  // namespace detail

template <class Key, class Comp>
void segmented_sort_keys(context& ctx, span<Key> keys, span<const std::uint32_t> offsets, Comp comp,
                         offsets_check check) {
  static_assert(!std::is_const_v<Key>, "canopy::segmented_sort_keys: keys must be writable");
  detail::segmented_sort_dispatch<Key, detail::merge_no_value, false>("canopy::segmented_sort_keys", ctx, keys,
                                                                      nullptr, offsets, comp, check);
}

template <class Key, class Value, class Comp>
void segmented_sort_pairs(context& ctx, span<Key> keys, span<Value> values, span<const std::uint32_t> offsets,
                          Comp comp, offsets_check check) {
  static_assert(!std::is_const_v<Key> && !std::is_const_v<Value>,
                "canopy::segmented_sort_pairs: spans must be writable");
  check_span(values, ctx.space(), "canopy::segmented_sort_pairs", "values");
  require(values.size() == keys.size(), "canopy::segmented_sort_pairs", "values",
          "length " + std::to_string(values.size()) + " differs from keys length " + std::to_string(keys.size()));
  detail::segmented_sort_dispatch<Key, Value, true>("canopy::segmented_sort_pairs", ctx, keys, values.data(), offsets,
                                                    comp, check);
}

// The instantiations in core/src/segmented_sort.cu, so that host-compiled callers reach the kernels.
#define CANOPY_SEGMENTED_SORT_EXTERN(K)                                                                  \
  extern template void segmented_sort_keys<K, less<K>>(context&, span<K>, span<const std::uint32_t>, less<K>, \
                                                       offsets_check);                                   \
  extern template void segmented_sort_pairs<K, std::uint32_t, less<K>>(                                  \
      context&, span<K>, span<std::uint32_t>, span<const std::uint32_t>, less<K>, offsets_check);
CANOPY_SEGMENTED_SORT_EXTERN(std::uint32_t)
CANOPY_SEGMENTED_SORT_EXTERN(std::int32_t)
CANOPY_SEGMENTED_SORT_EXTERN(float)
CANOPY_SEGMENTED_SORT_EXTERN(std::uint64_t)
#undef CANOPY_SEGMENTED_SORT_EXTERN

}  // namespace canopy
