// canopy/core/for_each.hpp — one parallel loop over both backends.
//
//   canopy::for_each(ctx, n, f);   // calls f(i) for every i in [0, n), in no particular order
//
// `f` is a __host__ __device__ functor (or an extended lambda, CANOPY_HD) taking std::size_t.
// On the CUDA backend it runs as a grid-stride kernel on ctx.stream() and returns without
// synchronising; on the host backend it runs as a oneTBB parallel loop and returns when done.
// Builders are written once on top of this. A translation unit that calls for_each with the CUDA
// backend must be compiled by nvcc; one compiled by the host compiler throws canopy::error.
#pragma once

#include <canopy/core/context.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>

namespace canopy {

namespace detail {
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
template <class F>
__global__ void for_each_kernel(std::size_t n, F f) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

template <class F>
void launch_for_each(const context& ctx, std::size_t n, const F& f) {
  constexpr unsigned block = 256;
  // Enough blocks to fill the machine many times over; the grid-stride loop covers the rest.
  const std::size_t max_blocks = std::size_t(std::max(ctx.device().multiprocessors, 1)) * 64;
  const std::size_t blocks = std::min((n + block - 1) / block, max_blocks);
  for_each_kernel<<<static_cast<unsigned>(blocks), block, 0, ctx.stream()>>>(n, f);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::for_each");
}
#endif
[[noreturn]] void throw_cuda_from_host_compiler(const char* function);
}  // namespace detail

//! Calls f(i) for i in [0, n) on the context's backend. n == 0 does nothing.
template <class F>
void for_each(context& ctx, std::size_t n, F f) {
  if (n == 0) return;
  if (ctx.is_cuda()) {
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
    detail::launch_for_each(ctx, n, f);
#else
    detail::throw_cuda_from_host_compiler("canopy::for_each");
#endif
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 1024), [&](const tbb::blocked_range<std::size_t>& r) {
    for (std::size_t i = r.begin(); i != r.end(); ++i) f(i);
  });
}

}  // namespace canopy
