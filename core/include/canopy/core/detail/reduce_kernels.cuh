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
#pragma once

#include <canopy/core/functional.hpp>
#include <canopy/core/detail/scan_kernels.cuh>
#include <canopy/core/detail/tuning.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

#include <type_traits>

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

//! Operators known to be commutative on T: their reduction may fold each lane's values across rows
//! before the warp combines lanes (one shuffle tree per warp instead of one per row).
template <class Op>
struct is_commutative : std::false_type {};
template <class T>
struct is_commutative<plus<T>> : std::is_arithmetic<T> {};
template <class T>
struct is_commutative<maximum<T>> : std::is_arithmetic<T> {};
template <class T>
struct is_commutative<minimum<T>> : std::is_arithmetic<T> {};
template <class T>
struct is_commutative<multiplies<T>> : std::is_arithmetic<T> {};

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
