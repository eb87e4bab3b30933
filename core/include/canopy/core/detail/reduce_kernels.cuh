// canopy/core/detail/reduce_kernels.cuh — the order-keeping reduction kernel.
//
// Block b reduces the contiguous rows [b*rows_per_block, ...) of the input; inside a block each
// warp owns a contiguous run of rows. A row is 32 lanes x one 16-byte vector (512 contiguous bytes
// per warp load). Each lane folds its VEC items, the warp folds the 32 lane values in lane order
// (shuffle tree, 5 steps), and lane 0 chains the rows. So op is only ever applied as
// op(earlier, later): non-commutative operators are exact. UNROLL rows are loaded before any is
// folded to keep UNROLL x 16 bytes in flight per thread.
#pragma once

#include <canopy/core/detail/scan_kernels.cuh>
#include <canopy/core/detail/tuning.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy {
namespace detail {

//! Folds lanes in lane order; the result is valid in lane 0.
template <class T, class Op>
__device__ __forceinline__ T warp_reduce_ordered(T v, const Op& op) {
#pragma unroll
  for (unsigned d = 1; d < 32; d <<= 1) {
    const T other = shfl_down(v, d);
    if (lane_id() + d < 32) v = op(v, other);
  }
  return v;
}

template <class T, class Op>
struct reduce_kernel_params {
  const T* in;
  std::size_t n;
  std::size_t rows_per_warp;  // rows of 32 x VEC elements each warp folds
  T* out;                     // one value per block
  T identity;
  Op op;
};

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

  T total = p.identity;  // meaningful in lane 0
  for (std::size_t r0 = row_begin; r0 < row_end; r0 += Unroll) {
    T x[Unroll][Vec];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const std::size_t row = r0 + u;
      const std::size_t base = row * row_items + lane * Vec;
      if (row < row_end && row < full_rows && aligned) {
        const vector_of<T, Vec> v = reinterpret_cast<const vector_of<T, Vec>*>(p.in + row * row_items)[lane];
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
      v = warp_reduce_ordered(v, p.op);
      total = p.op(total, v);
    }
  }
  if (lane == 0) s_warp[warp] = total;
  __syncthreads();
  if (threadIdx.x == 0) {
    T block_total = s_warp[0];
#pragma unroll
    for (int w = 1; w < Warps; ++w) block_total = p.op(block_total, s_warp[w]);
    p.out[blockIdx.x] = block_total;
  }
}

}  // namespace detail
}  // namespace canopy

#endif
