// canopy/core/detail/scan_dispatch.cuh — CUDA scan dispatch (interim: staged through the host
// engine while the single-pass kernels land; synchronises).
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/host_scan.hpp>

#include <vector>

namespace canopy {
namespace detail {

template <class T, class Op>
void cuda_scan(context& ctx, const T* in, T* out, std::size_t n, const std::uint8_t* head_flags,
               std::size_t segment_length, const T* identity, Op op) {
  std::vector<T> h(n), r(n);
  std::vector<std::uint8_t> f(head_flags ? n : 0);
  copy_bytes(ctx, h.data(), memory_space::host, in, memory_space::device, n * sizeof(T));
  if (head_flags) copy_bytes(ctx, f.data(), memory_space::host, head_flags, memory_space::device, n);
  ctx.synchronize();
  host_scan(h.data(), r.data(), n, head_flags ? f.data() : nullptr, segment_length, identity, op);
  copy_bytes(ctx, out, memory_space::device, r.data(), memory_space::host, n * sizeof(T));
  ctx.synchronize();
}

}  // namespace detail
}  // namespace canopy
