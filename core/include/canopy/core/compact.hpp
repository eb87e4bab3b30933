// canopy/core/compact.hpp — stream compaction (select) and stable partition.
//
//   canopy::select_flagged(ctx, in, flags, out, count);            // count: 1-element span, no sync
//   std::size_t k = canopy::select_if_count(ctx, in, out, is_hit);  // returns the count, syncs
//   canopy::partition(ctx, in, out, count, pred);                   // selected first, then the rest
//
// All variants are stable: selected elements keep their input order, and partition puts the
// rejected ones after them, also in input order (like std::stable_partition).
// CUDA backend: one pass with decoupled look-back over per-tile selected counts (n reads, k writes;
// partition writes the rejected elements from the back and reverses that region in a second short
// kernel). Host backend: two-pass chunked count + scatter on oneTBB.
// Predicates are CANOPY_HD functors bool(const T&). Host-compiled callers can use the CUDA backend
// for select_flagged/partition_flagged with the types instantiated in core/src/compact.cu
// (1/2/4/8/16-byte integers and float/double); predicate variants must be called from a .cu file.
// in and out must not overlap. out must hold in.size() elements.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/span.hpp>
#include <canopy/core/detail/host_compact.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#include <canopy/core/detail/compact_dispatch.cuh>
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace canopy {

namespace detail {
#if CANOPY_HAS_CUDA
//! CUDA compaction engine (compact_dispatch.cuh). Writes the selected count to *count (device).
template <class T, class Selector>
void cuda_select(context& ctx, const T* in, std::size_t n, T* out, std::size_t* count, Selector select,
                 bool partition);
#endif

template <class T, class Selector>
void run_select(context& ctx, const char* fn, span<const T> in, span<T> out, span<std::size_t> count,
                Selector select, bool partition) {
  static_assert(std::is_trivially_copyable_v<T>, "canopy compaction needs a trivially copyable value type");
  check_span(in, ctx.space(), fn, "in");
  check_span(out, ctx.space(), fn, "out");
  check_span(count, ctx.space(), fn, "count");
  require(count.size() == 1, fn, "count", "must hold exactly 1 element, holds " + std::to_string(count.size()));
  require(out.size() >= in.size(), fn, "out",
          "holds " + std::to_string(out.size()) + " elements, needs in.size() = " + std::to_string(in.size()));
  require(!overlaps(in, out), fn, "out",
          "overlaps in (compaction is not in place)");
  if (ctx.is_cuda()) {
#if CANOPY_HAS_CUDA
    cuda_select<T, Selector>(ctx, in.data(), in.size(), out.data(), count.data(), select, partition);
#endif
    return;
  }
  count[0] = host_select(in.data(), in.size(), out.data(), select, partition);
}

template <class T>
void check_flags(const context& ctx, const char* fn, span<const T> in, span<const std::uint8_t> flags) {
  check_span(flags, ctx.space(), fn, "flags");
  require(flags.size() == in.size(), fn, "flags",
          "length " + std::to_string(flags.size()) + " differs from in length " + std::to_string(in.size()));
}

inline std::size_t read_count(const buffer<std::size_t>& count) { return count.to_host()[0]; }
}  // namespace detail

//! Copies in[i] where flags[i] != 0 to out[0..k), in order; writes k to count[0]. A select
//! (select_flagged, select_if, select_if_count) writes nothing in out[k..).
//! Complexity O(n). Memory: CUDA one 16-byte descriptor per tile (256 threads x 32 = 8192
//! elements for T of up to 4 bytes, ≈ n/512 bytes; 128 x 16 = 2048 for 8-byte T, ≈ n/128 bytes)
//! plus under 512 bytes of padding and tile counter, kept by the context between calls
//! (context::keep_tile_descriptors: grows to the largest call's, not cleared per call).
template <class T>
void select_flagged(context& ctx, span<const T> in, span<const std::uint8_t> flags, span<T> out,
                    span<std::size_t> count) {
  detail::check_flags(ctx, "canopy::select_flagged", in, flags);
  detail::run_select(ctx, "canopy::select_flagged", in, out, count, detail::flag_selector{flags.data()}, false);
}

//! Copies the elements with pred(in[i]) true to out[0..k), in order; writes k to count[0].
template <class T, class Pred>
void select_if(context& ctx, span<const T> in, span<T> out, span<std::size_t> count, Pred pred) {
  detail::run_select(ctx, "canopy::select_if", in, out, count, detail::predicate_selector<Pred>{pred}, false);
}

//! Stable partition: out[0..k) = elements with pred true, out[k..n) = the others, both in input
//! order; writes k to count[0].
template <class T, class Pred>
void partition(context& ctx, span<const T> in, span<T> out, span<std::size_t> count, Pred pred) {
  detail::run_select(ctx, "canopy::partition", in, out, count, detail::predicate_selector<Pred>{pred}, true);
}

//! Stable partition by flags: flagged elements first, then the others, both in input order.
template <class T>
void partition_flagged(context& ctx, span<const T> in, span<const std::uint8_t> flags, span<T> out,
                       span<std::size_t> count) {
  detail::check_flags(ctx, "canopy::partition_flagged", in, flags);
  detail::run_select(ctx, "canopy::partition_flagged", in, out, count, detail::flag_selector{flags.data()}, true);
}

//! select_flagged returning the count to the host (synchronises).
template <class T>
std::size_t select_flagged_count(context& ctx, span<const T> in, span<const std::uint8_t> flags, span<T> out) {
  buffer<std::size_t> count(ctx, 1);
  select_flagged(ctx, in, flags, out, count.view());
  return detail::read_count(count);
}

//! select_if returning the count to the host (synchronises).
template <class T, class Pred>
std::size_t select_if_count(context& ctx, span<const T> in, span<T> out, Pred pred) {
  buffer<std::size_t> count(ctx, 1);
  select_if(ctx, in, out, count.view(), pred);
  return detail::read_count(count);
}

//! partition returning the count of selected elements to the host (synchronises).
template <class T, class Pred>
std::size_t partition_count(context& ctx, span<const T> in, span<T> out, Pred pred) {
  buffer<std::size_t> count(ctx, 1);
  partition(ctx, in, out, count.view(), pred);
  return detail::read_count(count);
}

//! partition_flagged returning the count of flagged elements to the host (synchronises).
template <class T>
std::size_t partition_flagged_count(context& ctx, span<const T> in, span<const std::uint8_t> flags, span<T> out) {
  buffer<std::size_t> count(ctx, 1);
  partition_flagged(ctx, in, flags, out, count.view());
  return detail::read_count(count);
}

}  // namespace canopy
