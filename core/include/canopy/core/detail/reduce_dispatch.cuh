// canopy/core/detail/reduce_dispatch.cuh — CUDA reduce dispatch: a grid sized to the machine folds
// the input into one partial per block. The streamed bulk-copy kernel (commutative operators on
// aligned inputs of at least four chunks on sm_90) folds the partials in its last block; otherwise
// the register kernel with one block folds them in a second launch. Small inputs take the one-block
// launch directly. Asynchronous on ctx.stream().
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/reduce_kernels.cuh>
#include <canopy/core/detail/scan_dispatch.cuh>
#include <canopy/core/detail/tuning.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

#include <algorithm>
#include <cstdint>

namespace canopy {
namespace detail {

template <class T, class Op, int block = tuning::reduce_block_threads, int unroll = tuning::reduce_vectors_per_thread>
void launch_reduce(context& ctx, const T* in, std::size_t n, T* out, std::size_t blocks, T identity, Op op) {
  constexpr std::size_t row_items = 32 * tuning::vector_elements<T>();
  const std::size_t rows = (n + row_items - 1) / row_items;
  const std::size_t warps = blocks * (block / 32);
  // Whole groups of UNROLL rows per warp, so that only the last warp sees a ragged end.
  const std::size_t per_warp = std::max<std::size_t>(1, (rows + warps - 1) / warps);
  const std::size_t rows_per_warp = (per_warp + unroll - 1) / unroll * unroll;
  reduce_kernel_params<T, Op> p{in, n, rows_per_warp, out, identity, op};
  reduce_kernel<T, Op, block, unroll><<<static_cast<unsigned>(blocks), block, 0, ctx.stream()>>>(p);
  CANOPY_CUDA_CHECK_LAUNCH("canopy::reduce_kernel");
}

//! The register-kernel reduction with an explicit block size and rows in flight per thread
//! (canopy-scan-tuning times it as the register-kernel reference; cuda_reduce falls back to it with
//! the tuning.hpp defaults).
template <class T, class Op, int Block, int Unroll>
void cuda_reduce_shaped(context& ctx, const T* in, std::size_t n, T* result, T identity, Op op) {
  constexpr std::size_t block_items = std::size_t(Block) * Unroll * tuning::vector_elements<T>();
  // One wave of resident blocks: a second partial wave would leave most SMs idle at the end.
  const std::size_t max_blocks = resident_blocks<reduce_kernel<T, Op, Block, Unroll>>(ctx, Block);
  // At least a few rows per warp so that each warp has loads to overlap.
  const std::size_t blocks = std::min(max_blocks, (n + 4 * block_items - 1) / (4 * block_items));
  if (blocks <= 1) {
    launch_reduce<T, Op, Block, Unroll>(ctx, in, n, result, 1, identity, op);
    return;
  }
  buffer<T> partial(ctx, blocks);
  launch_reduce<T, Op, Block, Unroll>(ctx, in, n, partial.data(), blocks, identity, op);
  launch_reduce<T, Op, Block, Unroll>(ctx, static_cast<const T*>(partial.data()), blocks, result, 1, identity, op);
}

//! Resident blocks per SM of reduce_bulk_kernel on the context's device, 0 where it cannot run
//! (resident_launch.cuh).
template <class T, class Op, int Block, int ChunkBytes, int Stages>
int reduce_bulk_blocks_per_sm(const context& ctx) {
  return resident_blocks_per_sm<reduce_bulk_kernel<T, Op, Block, ChunkBytes, Stages>>(
      ctx, Block, std::size_t(ChunkBytes) * Stages, residency_needs{90, false, false});
}

//! Reduction through reduce_bulk_kernel (commutative operators, 16-byte aligned input, sm_90), one
//! wave of blocks (at most `max_grid` when not 0: tests) and one launch: the kernel's done counter is
//! a word of the context's kept counters (context::keep_tile_descriptors, zero between calls), or of
//! a zeroed scratch while the stream is captured. False (nothing launched) where it does not apply.
template <class T, class Op, int Block, int ChunkBytes, int Stages>
bool cuda_reduce_bulk(context& ctx, const T* in, std::size_t n, T* result, T identity, Op op,
                      std::size_t max_grid = 0) {
  if constexpr (!is_commutative<Op>::value || tuning::vector_elements<T>() * sizeof(T) != 16) {
    return false;
  } else {
    constexpr std::size_t chunk_items = ChunkBytes / sizeof(T);
    if ((reinterpret_cast<std::uintptr_t>(in) & 15u) != 0 || n < 4 * chunk_items) return false;
    const int per_sm = reduce_bulk_blocks_per_sm<T, Op, Block, ChunkBytes, Stages>(ctx);
    if (per_sm <= 0) return false;
    std::size_t blocks =
        std::min<std::size_t>(std::size_t(per_sm) * std::max(ctx.device().multiprocessors, 1), n / chunk_items);
    if (max_grid != 0) blocks = std::min(blocks, max_grid);
    buffer<T> partial(ctx, blocks);
    // No look-back descriptors, only the counter words; word 0 is the scan/select tile counter.
    single_pass_state<unsigned> counters(ctx, 0);
    reduce_kernel_params<T, Op> p{in, n, 0, partial.data(), identity, op, result, counters.counter + 1};
    reduce_bulk_kernel<T, Op, Block, ChunkBytes, Stages>
        <<<static_cast<unsigned>(blocks), Block, std::size_t(ChunkBytes) * Stages, ctx.stream()>>>(p);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::reduce_bulk_kernel");
    return true;
  }
}

template <class T, class Op>
void cuda_reduce(context& ctx, const T* in, std::size_t n, T* result, T identity, Op op) {
  if (cuda_reduce_bulk<T, Op, tuning::reduce_bulk_block_threads, tuning::reduce_bulk_chunk_bytes,
                       tuning::reduce_bulk_stages>(ctx, in, n, result, identity, op))
    return;
  cuda_reduce_shaped<T, Op, tuning::reduce_block_threads, tuning::reduce_vectors_per_thread>(ctx, in, n, result,
                                                                                            identity, op);
}

}  // namespace detail
}  // namespace canopy

#endif
