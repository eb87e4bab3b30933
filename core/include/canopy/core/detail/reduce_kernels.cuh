// canopy/core/detail/reduce_kernels.cuh — the order-keeping reduction kernel.
//
// Warp w of block b folds the contiguous rows [(b*WARPS + w) * rows_per_warp, ...) of the input, so
// each block covers WARPS x rows_per_warp consecutive rows. A row is 32 lanes x one 16-byte vector
// (512 contiguous bytes per warp load). Each lane folds its VEC items, the warp folds the 32 lane
// values in lane order (shuffle tree, 5 steps), and lane 0 chains the rows. So op is only ever
// applied as op(earlier, later): non-commutative operators are exact. UNROLL rows are loaded before
// any is folded to keep UNROLL x 16 bytes in flight per thread. `identity` pads missing elements,
// so it must be an identity of op. For operators known to be commutative (is_commutative) each lane
// folds its own values across rows and the warp combines lanes once at the end.
//
// reduce_bulk_kernel (sm_90, commutative operators, 16-byte aligned input) streams chunks of the
// input into shared-memory stages with the copy engine (bulk copies completing on mbarriers), so
// the bytes in flight per SM are bounded by shared memory rather than registers, and the last block
// to finish folds the blocks' partials: one launch per reduction.
#pragma once

#include <canopy/core/detail/scan_kernels.cuh>
#include <canopy/core/detail/tuning.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy {
namespace detail {

template <class T, class Op>
struct reduce_kernel_params {
  const T* in;
  std::size_t n;
  std::size_t rows_per_warp;  // rows of 32 x VEC elements each warp folds
  T* out;                     // one value per block
  T identity;
  Op op;
  // reduce_bulk_kernel only: the result, and a counter that is zero when the kernel starts (the
  // kernel leaves it zero).
  T* result = nullptr;
  unsigned* done = nullptr;
};

//! Folds the warps' totals of a block in warp order (s_warp: one slot per warp) and writes the
//! block's total to *dst. Every thread of the block must call it (one barrier).
template <int Warps, class T, class Op>
__device__ __forceinline__ void store_block_total(T warp_total, T* s_warp, Op op, T* dst) {
  if (lane_id() == 0) s_warp[threadIdx.x / 32] = warp_total;
  __syncthreads();
  if (threadIdx.x == 0) {
    T block_total = s_warp[0];
#pragma unroll
    for (int w = 1; w < Warps; ++w) block_total = op(block_total, s_warp[w]);
    *dst = block_total;
  }
}

template <class T, class Op, int BlockThreads, int Unroll>
__global__ void __launch_bounds__(BlockThreads) reduce_kernel(reduce_kernel_params<T, Op> p) {
  constexpr int Vec = tuning::vector_elements<T>(), Warps = BlockThreads / 32;
  constexpr std::size_t row_items = 32 * Vec;
  __shared__ alignas(T) unsigned char s_warp_raw[Warps * sizeof(T)];
  T* s_warp = reinterpret_cast<T*>(s_warp_raw);

  const unsigned lane = lane_id(), warp = threadIdx.x / 32;
  const std::size_t rows = (p.n + row_items - 1) / row_items;
  const std::size_t warp_index = std::size_t(blockIdx.x) * Warps + warp;
  const std::size_t row_begin = warp_index * p.rows_per_warp;
  const std::size_t row_end = row_begin + p.rows_per_warp < rows ? row_begin + p.rows_per_warp : rows;
  const bool aligned = Vec > 1 && (reinterpret_cast<std::uintptr_t>(p.in) & 15u) == 0;
  const std::size_t full_rows = p.n / row_items;  // rows with no element past n

  constexpr bool commutative = is_commutative<Op>::value;
  T total = p.identity;  // meaningful in lane 0 (every lane when commutative)
  T lane_total[Unroll];
#pragma unroll
  for (int u = 0; u < Unroll; ++u) lane_total[u] = p.identity;
  for (std::size_t r0 = row_begin; r0 < row_end; r0 += Unroll) {
    T x[Unroll][Vec];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const std::size_t row = r0 + u;
      const std::size_t base = row * row_items + lane * Vec;
      if (row < row_end && row < full_rows && aligned) {
        // Read-only path: reduce never writes its input.
        const int4 w = __ldg(reinterpret_cast<const int4*>(p.in + row * row_items) + lane);
        vector_of<T, Vec> v;
        memcpy(&v, &w, 16);
#pragma unroll
        for (int j = 0; j < Vec; ++j) x[u][j] = v.v[j];
      } else {
#pragma unroll
        for (int j = 0; j < Vec; ++j) x[u][j] = (row < row_end && base + j < p.n) ? p.in[base + j] : p.identity;
      }
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      T v = x[u][0];
#pragma unroll
      for (int j = 1; j < Vec; ++j) v = p.op(v, x[u][j]);
      if constexpr (commutative) {
        lane_total[u] = p.op(lane_total[u], v);
      } else {
        v = warp_reduce_ordered(v, p.op);
        total = p.op(total, v);
      }
    }
  }
  if constexpr (commutative) {
#pragma unroll
    for (int u = 1; u < Unroll; ++u) lane_total[0] = p.op(lane_total[0], lane_total[u]);
    total = warp_reduce_ordered(lane_total[0], p.op);
  }
  store_block_total<Warps>(total, s_warp, p.op, p.out + blockIdx.x);
}

//! Streamed reduction of a commutative operator (sm_90). Block b folds the chunks b, b + G, ... (G =
//! gridDim.x) of CHUNK_BYTES each, which the copy engine brings into STAGES shared-memory stages
//! STAGES chunks ahead; each thread folds its 16-byte vectors of a stage, a barrier frees the stage,
//! and lane 0 of warp 0 refills it. Elements past the last whole chunk are folded with ordinary
//! loads, spread over all blocks. Each block writes its partial to p.out[b] and counts itself done
//! on p.done; the block that counts last folds the G partials in block order into *p.result and
//! zeroes p.done again. The chunk assignment and both folds are fixed, so the result does not vary
//! from run to run. Requires a 16-byte aligned input.
template <class T, class Op, int BlockThreads, int ChunkBytes, int Stages>
__global__ void __launch_bounds__(BlockThreads) reduce_bulk_kernel(reduce_kernel_params<T, Op> p) {
#if CANOPY_HAS_BULK_COPY
  constexpr int Vec = tuning::vector_elements<T>(), Warps = BlockThreads / 32;
  constexpr int chunk_items = ChunkBytes / int(sizeof(T));
  constexpr int vectors_per_thread = ChunkBytes / 16 / BlockThreads;
  static_assert(ChunkBytes % (16 * BlockThreads) == 0, "whole vectors per thread");
  static_assert(is_commutative<Op>::value, "commutative operators only");
  using vec_t = vector_of<T, Vec>;
  extern __shared__ __align__(128) unsigned char s_stages[];  // Stages x ChunkBytes
  __shared__ unsigned long long s_full[Stages];
  __shared__ alignas(T) unsigned char s_warp_raw[Warps * sizeof(T)];
  T* s_warp = reinterpret_cast<T*>(s_warp_raw);

  const std::size_t grid = gridDim.x;
  const std::size_t chunks = p.n / chunk_items;  // whole chunks
  const bool issuer = threadIdx.x == 0;
  const auto issue = [&](std::size_t c, int stage) {
    if (c >= chunks) return;
    mbarrier_arrive_expect_bytes(&s_full[stage], unsigned(ChunkBytes));
    bulk_copy_to_shared<false>(s_stages + std::size_t(stage) * ChunkBytes, p.in + c * std::size_t(chunk_items),
                               unsigned(ChunkBytes), &s_full[stage], 0ull);
  };
  if (issuer) {
    for (int s = 0; s < Stages; ++s) mbarrier_init(&s_full[s], 1);
    for (int s = 0; s < Stages; ++s) issue(blockIdx.x + s * grid, s);
  }
  __syncthreads();

  T lane_total = p.identity;
  int stage = 0;
  unsigned parity = 0;
  for (std::size_t c = blockIdx.x; c < chunks; c += grid) {
    mbarrier_wait(&s_full[stage], parity);
    const vec_t* src = reinterpret_cast<const vec_t*>(s_stages + std::size_t(stage) * ChunkBytes) + threadIdx.x;
    vec_t v[vectors_per_thread];
#pragma unroll
    for (int k = 0; k < vectors_per_thread; ++k) v[k] = src[k * BlockThreads];
    __syncthreads();  // every thread has read the stage
    if (issuer) issue(c + Stages * grid, stage);
#pragma unroll
    for (int k = 0; k < vectors_per_thread; ++k)
#pragma unroll
      for (int j = 0; j < Vec; ++j) lane_total = p.op(lane_total, v[k].v[j]);
    if (++stage == Stages) {
      stage = 0;
      parity ^= 1u;
    }
  }
  for (std::size_t i = chunks * chunk_items + std::size_t(blockIdx.x) * BlockThreads + threadIdx.x; i < p.n;
       i += grid * BlockThreads)
    lane_total = p.op(lane_total, p.in[i]);

  store_block_total<Warps>(warp_reduce_ordered(lane_total, p.op), s_warp, p.op, p.out + blockIdx.x);

  // The last block to finish folds the partials (the pattern of threadFenceReduction in the CUDA
  // samples): each partial is made visible device-wide before its block is counted.
  __shared__ bool s_last;
  if (threadIdx.x == 0) {
    __threadfence();
    s_last = atomicAdd(p.done, 1u) == unsigned(gridDim.x) - 1;
  }
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  T folded = p.identity;
  for (std::size_t b = threadIdx.x; b < grid; b += BlockThreads) folded = p.op(folded, load_l2(p.out + b));
  store_block_total<Warps>(warp_reduce_ordered(folded, p.op), s_warp, p.op, p.result);
  if (threadIdx.x == 0) *p.done = 0u;
#else
  __trap();  // the dispatch never launches this kernel on a device without bulk copies
#endif
}

}  // namespace detail
}  // namespace canopy

#endif
