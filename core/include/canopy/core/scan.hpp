// canopy/core/scan.hpp — prefix scans: plain, segmented by head flags, and over regular segments.
//
//   canopy::inclusive_scan(ctx, in, out, canopy::plus<int>{});
//   canopy::exclusive_segmented_scan(ctx, in, heads, out, 0, canopy::plus<int>{});
//   canopy::inclusive_scan_regular_segments(ctx, image, rows, width, canopy::plus<float>{});
//
// CUDA backend: one pass over the data (a chained scan with decoupled look-back, Merrill & Garland
// 2016; Yan et al.), 2n element moves plus O(n / tile) bytes of tile status; asynchronous on
// ctx.stream(). Host backend: a two-pass chunked scan on oneTBB; returns when done.
//
// Operators need associativity only (order is kept: results are op(earlier, later)); T is any
// trivially copyable type. `in` and `out` may be the same span (in place), but must not overlap
// otherwise. A translation unit compiled by the host compiler can call these with the CUDA backend
// for the types and operators that core/src/scan.cu instantiates (int32/uint32/int64/uint64/float/
// double with plus, maximum, minimum); other combinations must be called from a .cu file.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/functional.hpp>
#include <canopy/core/span.hpp>
#include <canopy/core/detail/host_scan.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#include <canopy/core/detail/scan_dispatch.cuh>
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace canopy {

namespace detail {
#if CANOPY_HAS_CUDA
//! CUDA scan engine (scan_dispatch.cuh). `identity` is null for inclusive scans; `head_flags`
//! non-null selects flag segments, `segment_length` > 0 regular segments.
template <class T, class Op>
void cuda_scan(context& ctx, const T* in, T* out, std::size_t n, const std::uint8_t* head_flags,
               std::size_t segment_length, const T* identity, Op op);
#endif

template <class T, class Op>
void run_scan(context& ctx, const char* fn, span<const T> in, span<T> out, span<const std::uint8_t> head_flags,
              std::size_t segment_length, const T* identity, Op op) {
  static_assert(std::is_trivially_copyable_v<T>, "canopy scans need a trivially copyable value type");
  check_scan_arguments(ctx, fn, in, out);
  if (head_flags.size() != 0) {
    check_span(head_flags, ctx.space(), fn, "head_flags");
    require(head_flags.size() == in.size(), fn, "head_flags",
            "length " + std::to_string(head_flags.size()) + " differs from in length " + std::to_string(in.size()) +
                " (pass an empty span for a single segment)");
  }
  const std::size_t n = in.size();
  if (n == 0) return;
  const std::uint8_t* flags = head_flags.size() ? head_flags.data() : nullptr;
  if (ctx.is_cuda()) {
#if CANOPY_HAS_CUDA
    cuda_scan<T, Op>(ctx, in.data(), out.data(), n, flags, segment_length, identity, op);
#endif
    return;
  }
  host_scan<T, Op>(in.data(), out.data(), n, flags, segment_length, identity, op);
}
}  // namespace detail

//! out[i] = in[0] op in[1] op ... op in[i].
//! Complexity O(n) work. Memory: CUDA one look-back descriptor per tile plus under 512 bytes of
//! padding and tile counter, kept by the context between calls (it grows to the largest call's and
//! is not cleared per call: context::keep_tile_descriptors; descriptors larger than 8 bytes are
//! temporary instead). Plain scans of 4- and 8-byte values under plus, minimum,
//! maximum or multiplies, with 16-byte aligned in and out, on sm_90 (the persistent kernel): 8 bytes per 8192 elements (4-byte T, ≈ n/1024 bytes) or 16 bytes per 4096
//! (8-byte T, ≈ n/256 bytes); otherwise 8 bytes per 32768 elements (T of up to 4 bytes, ≈ n/4096
//! bytes) or 16 bytes per 4096 (8-byte T);
//! host one value per chunk. Throws invalid_argument for mismatched lengths, null spans with n > 0,
//! spans in the wrong memory space, or partially overlapping in/out.
template <class T, class Op>
void inclusive_scan(context& ctx, span<const T> in, span<T> out, Op op) {
  detail::run_scan<T, Op>(ctx, "canopy::inclusive_scan", in, out, {}, 0, nullptr, op);
}

//! out[0] = identity, out[i] = in[0] op ... op in[i-1]. `identity` must be op's identity.
template <class T, class Op>
void exclusive_scan(context& ctx, span<const T> in, span<T> out, T identity, Op op) {
  detail::run_scan<T, Op>(ctx, "canopy::exclusive_scan", in, out, {}, 0, &identity, op);
}

//! Inclusive scan restarted at every head: head_flags[i] != 0 starts a segment at i, and element 0
//! always starts one. head_flags has in.size() entries, or none at all (one segment: a plain scan).
template <class T, class Op>
void inclusive_segmented_scan(context& ctx, span<const T> in, span<const std::uint8_t> head_flags, span<T> out,
                              Op op) {
  detail::run_scan<T, Op>(ctx, "canopy::inclusive_segmented_scan", in, out, head_flags, 0, nullptr, op);
}

//! Exclusive scan restarted at every head (out[i] = identity where i starts a segment).
template <class T, class Op>
void exclusive_segmented_scan(context& ctx, span<const T> in, span<const std::uint8_t> head_flags, span<T> out,
                              T identity, Op op) {
  detail::run_scan<T, Op>(ctx, "canopy::exclusive_segmented_scan", in, out, head_flags, 0, &identity, op);
}

//! Inclusive scan of each segment [k*L, min((k+1)*L, n)), L = segment_length > 0 (e.g. the rows of
//! an image). Heads are derived from the index: no flags array exists in memory.
template <class T, class Op>
void inclusive_scan_regular_segments(context& ctx, span<const T> in, span<T> out, std::size_t segment_length, Op op) {
  require(segment_length > 0, "canopy::inclusive_scan_regular_segments", "segment_length", "must be > 0");
  detail::run_scan<T, Op>(ctx, "canopy::inclusive_scan_regular_segments", in, out, {}, segment_length, nullptr, op);
}

//! Exclusive scan of each regular segment of length segment_length > 0.
template <class T, class Op>
void exclusive_scan_regular_segments(context& ctx, span<const T> in, span<T> out, std::size_t segment_length,
                                     T identity, Op op) {
  require(segment_length > 0, "canopy::exclusive_scan_regular_segments", "segment_length", "must be > 0");
  detail::run_scan<T, Op>(ctx, "canopy::exclusive_scan_regular_segments", in, out, {}, segment_length, &identity,
                          op);
}

}  // namespace canopy
