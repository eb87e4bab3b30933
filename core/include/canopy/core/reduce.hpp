// canopy/core/reduce.hpp — reduction of a span with an associative operator.
//
//   canopy::reduce(ctx, values, total, 0, canopy::plus<int>{});  // total: 1-element span, no sync
//   int sum = canopy::reduce(ctx, values, 0, canopy::plus<int>{}); // returns to the host, syncs
//
// CUDA backend: one pass with 16-byte vector loads over a grid sized to the machine, then one
// block reduces the per-block partials (n elements read once, 2 small launches). Host backend:
// chunked oneTBB reduction. Order is kept (op(earlier, later)): non-commutative ops work.
// Host-compiled callers can use the CUDA backend for the types and operators instantiated in
// core/src/reduce.cu (int32/uint32/int64/uint64/float/double with plus, maximum, minimum).
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/functional.hpp>
#include <canopy/core/span.hpp>
#include <canopy/core/detail/host_reduce.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#include <canopy/core/detail/reduce_dispatch.cuh>
#endif

#include <type_traits>

namespace canopy {

namespace detail {
#if CANOPY_HAS_CUDA
//! CUDA reduction engine (reduce_dispatch.cuh): writes in[0] op ... op in[n-1] (or identity) to *result.
template <class T, class Op>
void cuda_reduce(context& ctx, const T* in, std::size_t n, T* result, T identity, Op op);
#endif
}  // namespace detail

//! Writes in[0] op ... op in[n-1] to result[0] (a 1-element span in ctx.space()), asynchronously
//! on the CUDA backend. `identity` must be an identity of op (e.g. 0 for plus, the lowest value for
//! maximum): the CUDA backend pads partial tiles and empty blocks with it. n == 0 writes identity.
//! Complexity O(n). Temporary memory: CUDA one T per block of the grid (≤ a few KiB); host one T per chunk.
template <class T, class Op>
void reduce(context& ctx, span<const T> in, span<T> result, T identity, Op op) {
  static_assert(std::is_trivially_copyable_v<T>, "canopy::reduce needs a trivially copyable value type");
  check_span(in, ctx.space(), "canopy::reduce", "in");
  check_span(result, ctx.space(), "canopy::reduce", "result");
  require(result.size() == 1, "canopy::reduce", "result",
          "must hold exactly 1 element, holds " + std::to_string(result.size()));
  if (ctx.is_cuda()) {
#if CANOPY_HAS_CUDA
    detail::cuda_reduce<T, Op>(ctx, in.data(), in.size(), result.data(), identity, op);
#endif
    return;
  }
  result[0] = detail::host_reduce(in.data(), in.size(), identity, op);
}

//! Returns in[0] op ... op in[n-1] (identity when n == 0) to the host. Synchronises the context's stream.
template <class T, class Op>
T reduce(context& ctx, span<const T> in, T identity, Op op) {
  if (!ctx.is_cuda()) {
    check_span(in, ctx.space(), "canopy::reduce", "in");
    return detail::host_reduce(in.data(), in.size(), identity, op);
  }
  buffer<T> result(ctx, 1);
  reduce(ctx, in, result.view(), identity, op);
  return result.to_host()[0];
}

}  // namespace canopy
