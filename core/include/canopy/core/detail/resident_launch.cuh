// canopy/core/detail/resident_launch.cuh — host side of kernels whose grid is one wave of resident
// blocks (the persistent scan, the streamed reduction, the SAT's persistent mode): how many blocks of
// a kernel fit on an SM of the context's device, and a cooperative launch that the runtime refuses
// rather than run a grid that cannot be resident all at once.
#pragma once

#include <canopy/core/context.hpp>
#include <canopy/core/detail/dependent_launch.cuh>
#include <canopy/core/error.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

namespace canopy {
namespace detail {

//! What a kernel needs of the device before resident_blocks_per_sm counts its blocks.
struct residency_needs {
  int min_ptx = 0;                    //!< the loaded code's PTX version (90: sm_90 features such as bulk copies)
  bool cooperative = false;           //!< cooperative launches (the grid must be resident all at once)
  bool max_shared_carveout = false;   //!< ask for the largest shared-memory carveout
};

//! Blocks of `Kernel` (`threads` per block, `dynamic_bytes` of dynamic shared memory, opted in here)
//! that fit on one SM of the context's device; 0 where it cannot run there: no code for the device
//! in this build, code older than needs.min_ptx, static + dynamic shared memory above the device's
//! per-block opt-in limit, or no cooperative launch when needed. Queried once per kernel, device and
//! host thread; `threads`, `dynamic_bytes` and `needs` must be the same on every call for a kernel.
template <auto Kernel>
int resident_blocks_per_sm(const context& ctx, int threads, std::size_t dynamic_bytes, residency_needs needs) {
  static thread_local std::vector<int> cache;  // by device ordinal; -1: not queried yet
  const int device = ctx.device().ordinal;
  if (device < 0) return 0;
  if (std::size_t(device) >= cache.size()) cache.resize(std::size_t(device) + 1, -1);
  int& per_sm = cache[std::size_t(device)];
  if (per_sm >= 0) return per_sm;
  per_sm = 0;
  cudaFuncAttributes attributes{};
  if (cudaFuncGetAttributes(&attributes, Kernel) != cudaSuccess) {
    (void)cudaGetLastError();  // no code for this device: the caller takes its other path
    return per_sm;
  }
  int cooperative = 1;
  if (needs.cooperative)
    CANOPY_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  const bool fits = dynamic_bytes + attributes.sharedSizeBytes <= ctx.device().shared_memory_per_block_optin;
  if (!cooperative || attributes.ptxVersion < needs.min_ptx || !fits) return per_sm;
  CANOPY_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(dynamic_bytes)));
  if (needs.max_shared_carveout)
    CANOPY_CUDA_CHECK(
        cudaFuncSetAttribute(Kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  CANOPY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, threads, dynamic_bytes));
  return per_sm;
}

//! Launches kernel<<<grid, threads, dynamic_bytes, stream>>>(args...) as a cooperative grid: the
//! runtime either makes every block resident at once or refuses, e.g. where an MPS SM limit leaves
//! too few SMs. Returns false on that refusal (cudaErrorCooperativeLaunchTooLarge, which is
//! not sticky and is cleared here), having launched nothing; other errors throw, naming `what`
//! (e.g. "launch of canopy::persistent_scan_kernel").
template <class... Params, class... Args>
bool launch_cooperative(void (*kernel)(Params...), unsigned grid, int threads, std::size_t dynamic_bytes,
                        cudaStream_t stream, const char* what, Args&&... args) {
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeCooperative;
  attribute[0].val.cooperative = 1;
  const cudaLaunchConfig_t config = launch_config(grid, unsigned(threads), dynamic_bytes, stream, attribute, 1u);
  const cudaError_t launched = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (launched == cudaErrorCooperativeLaunchTooLarge) {
    (void)cudaGetLastError();
    return false;
  }
  if (launched != cudaSuccess) throw_cuda_error(int(launched), what, __FILE__, __LINE__);
  return true;
}

}  // namespace detail
}  // namespace canopy

#endif
