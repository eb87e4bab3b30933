// canopy/core/detail/compact_dispatch.cuh — CUDA select/partition dispatch. Asynchronous on
// ctx.stream(); the count is written to device memory by the last tile.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/compact_kernels.cuh>
#include <canopy/core/detail/host_compact.hpp>
#include <canopy/core/detail/scan_dispatch.cuh>
#include <canopy/core/detail/tuning.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

#include <algorithm>
#include <climits>

namespace canopy {
namespace detail {

template <class T, class Selector, class Shape = tuning::select_shape<T>>
void launch_select(context& ctx, const T* in, std::size_t n, T* out, std::size_t* count, Selector select,
                   bool partition) {
  if (n == 0) {
    CANOPY_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(std::size_t), ctx.stream()));
    return;
  }
  static_assert(Shape::tile_items * sizeof(T) <= 40 * 1024,
                "values too large to stage a tile in shared memory: select indices, then gather");
  const std::size_t tiles = (n + Shape::tile_items - 1) / Shape::tile_items;
  require(tiles <= std::size_t(INT_MAX), "canopy select", "in", "too many elements for one launch");
  single_pass_state<unsigned long long> state(ctx, tiles);
  select_kernel_params<T, Selector> p{in, out, n, count, state.status, tiles, state.counter, select, partition};
  p.epoch = state.epoch;
  single_pass_select_kernel<T, Selector, Shape>
      <<<static_cast<unsigned>(tiles), Shape::block_threads, 0, ctx.stream()>>>(p);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::single_pass_select_kernel");
  if (partition) {
    constexpr unsigned block = 256;
    const std::size_t max_blocks = std::size_t(std::max(ctx.device().multiprocessors, 1)) * 16;
    const std::size_t blocks = std::max<std::size_t>(1, std::min(max_blocks, (n / 2 + block - 1) / block));
    reverse_tail_kernel<T><<<static_cast<unsigned>(blocks), block, 0, ctx.stream()>>>(out, n, count);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::reverse_tail_kernel");
  }
}

template <class T, class Selector>
void cuda_select(context& ctx, const T* in, std::size_t n, T* out, std::size_t* count, Selector select,
                 bool partition) {
  launch_select<T, Selector>(ctx, in, n, out, count, select, partition);
}

}  // namespace detail
}  // namespace canopy

#endif
