// canopy/core/detail/scan_dispatch.cuh — CUDA scan dispatch: picks the tile shape for the value and
// accumulator types (tuning.hpp), takes the tile descriptors from the context's resource, zeroes
// them and launches one block per tile (ids taken in order from the counter). Asynchronous on
// ctx.stream(). Temporary memory: 8 bytes per tile for 4-byte accumulators, 16 for 8-byte ones,
// 4 + 2 x sizeof(Acc) rounded up to words otherwise, plus 256 bytes.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/host_scan.hpp>
#include <canopy/core/detail/scan_kernels.cuh>
#include <canopy/core/detail/tuning.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

#include <algorithm>
#include <climits>

namespace canopy {
namespace detail {

//! Scratch of a single-pass pass: tile descriptors followed by the tile counter, zeroed together.
struct single_pass_scratch {
  buffer<unsigned char> bytes;
  void* status = nullptr;
  unsigned* counter = nullptr;

  single_pass_scratch(context& ctx, std::size_t status_bytes) {
    const std::size_t padded = (status_bytes + 255) / 256 * 256;
    bytes = buffer<unsigned char>(ctx, padded + 256);
    status = bytes.data();
    counter = reinterpret_cast<unsigned*>(bytes.data() + padded);
    CANOPY_CUDA_CHECK(cudaMemsetAsync(bytes.data(), 0, bytes.size(), ctx.stream()));
  }
};

//! Blocks of Kernel that fit on the device at once (one full wave), cached per kernel.
template <auto Kernel>
std::size_t resident_blocks(const context& ctx, int block_threads) {
  static thread_local int cached_device = -1;
  static thread_local int per_sm = 0;
  if (cached_device != ctx.device().ordinal) {
    CANOPY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, block_threads, 0));
    cached_device = ctx.device().ordinal;
  }
  return std::size_t(std::max(per_sm, 1)) * std::size_t(std::max(ctx.device().multiprocessors, 1));
}

template <class T, class Op, int Mode,
          class Shape = tuning::default_scan_shape<T, typename scan_accumulator<T, Op, Mode>::type>>
void launch_single_pass_scan(context& ctx, const T* in, T* out, std::size_t n, const std::uint8_t* flags,
                             std::size_t segment_length, const T* identity, Op op) {
  using Acc = typename scan_accumulator<T, Op, Mode>::type;
  const std::size_t tiles = (n + Shape::tile_items - 1) / Shape::tile_items;
  require(tiles <= std::size_t(INT_MAX), "canopy scan", "in", "too many elements for one launch");
  single_pass_scratch scratch(ctx, tile_status_bytes<Acc>(tiles));
  scan_kernel_params<T, Op> p{in, out, n, flags, segment_length, identity ? *identity : T{}, identity != nullptr,
                              scratch.status, tiles, scratch.counter, op};
  single_pass_scan_kernel<T, Op, Shape, Mode>
      <<<static_cast<unsigned>(tiles), Shape::block_threads, 0, ctx.stream()>>>(p);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::single_pass_scan_kernel");
}

template <class T, class Op>
void cuda_scan(context& ctx, const T* in, T* out, std::size_t n, const std::uint8_t* head_flags,
               std::size_t segment_length, const T* identity, Op op) {
  if (n == 0) return;
  if (head_flags != nullptr)
    launch_single_pass_scan<T, Op, scan_flagged>(ctx, in, out, n, head_flags, 0, identity, op);
  else if (segment_length != 0 && segment_length < n)
    launch_single_pass_scan<T, Op, scan_regular>(ctx, in, out, n, nullptr, segment_length, identity, op);
  else  // no segments, or one regular segment covering everything
    launch_single_pass_scan<T, Op, scan_plain, tuning::plain_scan_shape<T>>(ctx, in, out, n, nullptr, 0, identity,
                                                                             op);
}

}  // namespace detail
}  // namespace canopy

#endif
