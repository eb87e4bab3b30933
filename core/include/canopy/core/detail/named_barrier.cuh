// canopy/core/detail/named_barrier.cuh — bar.sync on a named barrier, so that the warps of one group
// wait only for each other: the pairs of runs of a merge round (merge_kernels.cuh), the roles of the
// SAT's region kernel (structures/detail/sat_region_kernels.cuh).
#pragma once

#include <canopy/core/config.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy::detail {

//! bar.sync on named barrier `id` (1..15; __syncthreads uses 0) for `threads` threads (a multiple
//! of 32; every warp taking part must execute it).
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace canopy::detail

#endif
