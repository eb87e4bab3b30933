// canopy/core/detail/compact_dispatch.cuh — CUDA compaction dispatch (interim: staged through the
// host engine while the single-pass kernels land; synchronises).
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/host_compact.hpp>

#include <vector>

namespace canopy {
namespace detail {

template <class T, class Selector>
void cuda_select(context& ctx, const T* in, std::size_t n, T* out, std::size_t* count, Selector select,
                 bool partition) {
  std::vector<T> h(n), r(n);
  if (n) copy_bytes(ctx, h.data(), memory_space::host, in, memory_space::device, n * sizeof(T));
  ctx.synchronize();
  std::size_t k;
  if constexpr (std::is_same_v<Selector, flag_selector>) {
    std::vector<std::uint8_t> f(n);
    if (n) copy_bytes(ctx, f.data(), memory_space::host, select.flags, memory_space::device, n);
    ctx.synchronize();
    k = host_select(h.data(), n, r.data(), flag_selector{f.data()}, partition);
  } else {
    k = host_select(h.data(), n, r.data(), select, partition);
  }
  if (n) copy_bytes(ctx, out, memory_space::device, r.data(), memory_space::host, n * sizeof(T));
  copy_bytes(ctx, count, memory_space::device, &k, memory_space::host, sizeof(k));
  ctx.synchronize();
}

}  // namespace detail
}  // namespace canopy
