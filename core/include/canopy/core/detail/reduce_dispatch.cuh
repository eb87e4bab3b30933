// canopy/core/detail/reduce_dispatch.cuh — CUDA reduce dispatch (interim: staged through the host
// engine while the kernels land; synchronises).
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/host_reduce.hpp>

#include <vector>

namespace canopy {
namespace detail {

template <class T, class Op>
void cuda_reduce(context& ctx, const T* in, std::size_t n, T* result, T identity, Op op) {
  std::vector<T> h(n);
  if (n) copy_bytes(ctx, h.data(), memory_space::host, in, memory_space::device, n * sizeof(T));
  ctx.synchronize();
  const T r = host_reduce(h.data(), n, identity, op);
  copy_bytes(ctx, result, memory_space::device, &r, memory_space::host, sizeof(T));
  ctx.synchronize();
}

}  // namespace detail
}  // namespace canopy
