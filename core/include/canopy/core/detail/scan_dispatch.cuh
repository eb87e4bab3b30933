// canopy/core/detail/scan_dispatch.cuh — CUDA scan dispatch: picks the kernel and tile shape for the
// value and accumulator types (tuning.hpp), takes the tile descriptors from the context's resource,
// zeroes them and launches either
//   - the persistent plain scan (plain scans of 4- and 8-byte values under operators known to be
//     commutative, 16-byte aligned in/out, sm_90 devices): one wave of blocks, tiles assigned
//     statically, cooperative launch; or
//   - one block per tile (ids taken in order from the counter): every other case, and the
//     fallback whenever the persistent kernel cannot run or its grid cannot be co-resident.
// Asynchronous on ctx.stream(). Tile descriptors: 8 bytes per tile for 4-byte accumulators and 16
// for 8-byte ones, kept by the context between calls with an epoch per call (nothing to clear per
// call); 4 + 2 x sizeof(Acc) rounded up to words otherwise, temporary and zeroed, plus 256 bytes.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/host_scan.hpp>
#include <canopy/core/detail/resident_launch.cuh>
#include <canopy/core/detail/scan_kernels.cuh>
#include <canopy/core/detail/tuning.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

#include <algorithm>
#include <climits>
#include <cstdint>

namespace canopy {
namespace detail {

//! Tile descriptors and tile counter of one single-pass launch over `tiles` tiles. 8- and 16-byte
//! descriptors (accumulators of up to 8 bytes) are the context's kept ones with this call's epoch:
//! no clearing, so no extra operation on the stream before the kernel (a 64 KiB memset cost the
//! H100 2.7 us of GPU time, session 5). Larger descriptors, and every call made while the stream is
//! captured into a graph (a replay would reuse the captured epoch), get a zeroed scratch (epoch 0).
template <class Acc>
struct single_pass_state {
  buffer<unsigned char> scratch;
  void* status = nullptr;
  unsigned* counter = nullptr;
  unsigned epoch = 0;

  single_pass_state(context& ctx, std::size_t tiles) {
    if (tile_status_keeps_epochs<Acc>() && !ctx.stream_capturing()) {
      const context::tile_descriptors kept = ctx.keep_tile_descriptors(tile_status<Acc>::bytes_per_tile, tiles);
      status = kept.storage;
      counter = kept.tile_counter;
      epoch = kept.epoch;
    } else {
      const std::size_t padded = (tile_status_bytes<Acc>(tiles) + 255) / 256 * 256;
      scratch = buffer<unsigned char>(ctx, padded + 256);
      status = scratch.data();
      counter = reinterpret_cast<unsigned*>(scratch.data() + padded);
      CANOPY_CUDA_CHECK(cudaMemsetAsync(scratch.data(), 0, scratch.size(), ctx.stream()));
    }
  }
};

//! Blocks of Kernel that fit on the device at once (one full wave; at least one per SM).
template <auto Kernel>
std::size_t resident_blocks(const context& ctx, int block_threads) {
  const int per_sm = resident_blocks_per_sm<Kernel>(ctx, block_threads, 0, residency_needs{});
  return std::size_t(std::max(per_sm, 1)) * std::size_t(std::max(ctx.device().multiprocessors, 1));
}

template <class T, class Op, int Mode,
          class Shape = tuning::default_scan_shape<T, typename scan_accumulator<T, Op, Mode>::type>>
void launch_single_pass_scan(context& ctx, const T* in, T* out, std::size_t n, const std::uint8_t* flags,
                             std::size_t segment_length, const T* identity, Op op) {
  using Acc = typename scan_accumulator<T, Op, Mode>::type;
  const std::size_t tiles = (n + Shape::tile_items - 1) / Shape::tile_items;
  require(tiles <= std::size_t(INT_MAX), "canopy scan", "in", "too many elements for one launch");
  single_pass_state<Acc> state(ctx, tiles);
  scan_kernel_params<T, Op> p{in, out, n, flags, segment_length, identity ? *identity : T{}, identity != nullptr,
                              state.status, tiles, state.counter, op};
  p.epoch = state.epoch;
  single_pass_scan_kernel<T, Op, Shape, Mode>
      <<<static_cast<unsigned>(tiles), Shape::block_threads, 0, ctx.stream()>>>(p);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::single_pass_scan_kernel");
}

//! Resident blocks per SM of the persistent scan kernel for Shape on the context's device, or 0 when
//! it cannot run there (no sm_90 code in this build, no cooperative launch, too little shared
//! memory); resident_launch.cuh.
template <class T, class Op, class Shape>
int persistent_scan_blocks_per_sm(const context& ctx) {
  return resident_blocks_per_sm<persistent_scan_kernel<T, Op, Shape>>(
      ctx, Shape::block_threads, Shape::shared_bytes, residency_needs{90, true, false});
}

//! Plain scan through persistent_scan_kernel (scan_kernels.cuh). Returns false, having launched
//! nothing that writes `out`, when that kernel cannot take this call: misaligned pointers, no
//! sm_90 code or device, or a grid the runtime will not launch as co-resident (the cooperative launch is
//! refused when the grid exceeds what the device can hold at once, e.g. under an MPS SM limit). The caller then runs the one-block-per-tile
//! kernel. `max_grid` (0: none) caps the grid below one wave, for tests that need many tiles per
//! block at small sizes; `profile` receives 16 words per tile from shapes with persist_profile.
template <class T, class Op, class Shape = tuning::plain_persistent_shape<T>>
bool launch_persistent_scan(context& ctx, const T* in, T* out, std::size_t n, const T* identity, Op op,
                            std::size_t max_grid = 0, unsigned long long* profile = nullptr) {
  static_assert(tuning::persistent_scan_supports<T>(), "4- or 8-byte values");
  static_assert(is_commutative<Op>::value, "operators known to be commutative");
  if (n == 0 || ((reinterpret_cast<std::uintptr_t>(in) | reinterpret_cast<std::uintptr_t>(out)) & 15u) != 0)
    return false;
  const int per_sm = persistent_scan_blocks_per_sm<T, Op, Shape>(ctx);
  if (per_sm <= 0) return false;
  const std::size_t tiles = (n + Shape::tile_items - 1) / Shape::tile_items;
  require(tiles <= std::size_t(INT_MAX), "canopy scan", "in", "too many elements for one launch");
  std::size_t grid = std::min(tiles, std::size_t(per_sm) * std::size_t(std::max(ctx.device().multiprocessors, 1)));
  if (max_grid != 0) grid = std::min(grid, max_grid);
  single_pass_state<T> state(ctx, tiles);
  scan_kernel_params<T, Op> p{in, out, n, nullptr, 0, identity ? *identity : T{}, identity != nullptr,
                              state.status, tiles, state.counter, op, profile};
  p.epoch = state.epoch;
  return launch_cooperative(persistent_scan_kernel<T, Op, Shape>, static_cast<unsigned>(grid), Shape::block_threads,
                            Shape::shared_bytes, ctx.stream(), "launch of canopy::persistent_scan_kernel", p);
}

template <class T, class Op>
void cuda_scan(context& ctx, const T* in, T* out, std::size_t n, const std::uint8_t* head_flags,
               std::size_t segment_length, const T* identity, Op op) {
  if (n == 0) return;
  if (head_flags != nullptr)
    launch_single_pass_scan<T, Op, scan_flagged>(ctx, in, out, n, head_flags, 0, identity, op);
  else if (segment_length != 0 && segment_length < n)
    launch_single_pass_scan<T, Op, scan_regular>(ctx, in, out, n, nullptr, segment_length, identity, op);
  else {  // no segments, or one regular segment covering everything
    if constexpr (tuning::persistent_scan_supports<T>() && is_commutative<Op>::value) {
      if (launch_persistent_scan<T, Op>(ctx, in, out, n, identity, op)) return;
    }
    launch_single_pass_scan<T, Op, scan_plain, tuning::plain_scan_shape<T>>(ctx, in, out, n, nullptr, 0, identity,
                                                                             op);
  }
}

}  // namespace detail
}  // namespace canopy

#endif
