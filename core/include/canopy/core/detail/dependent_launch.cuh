// canopy/core/detail/dependent_launch.cuh — programmatic dependent launch (sm_90), shared by the
// merge sort and radix sort launch sequences. Compiled only by nvcc.
//
// A kernel launched with cudaLaunchAttributeProgrammaticStreamSerialization may be scheduled while
// the previous kernel of its stream runs its last blocks. Each of its blocks first lets its own
// successor be scheduled (griddepcontrol.launch_dependents), then waits for its predecessor to
// finish and its memory to be visible (griddepcontrol.wait) before it touches memory. Kernels
// launched without the attribute, and devices before sm_90, behave as ordinary stream order.
#pragma once

#include <canopy/core/config.hpp>
#include <canopy/core/error.hpp>

#include <cstddef>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy::detail {

//! Lets the next kernel of the stream be scheduled, if it was launched with launch_dependent(true,
//! ...). No-op on devices before sm_90 and without a dependent.
__device__ __forceinline__ void dependent_launch_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
//! Waits until the previous kernel of the stream has finished and its memory is visible, where this
//! one was launched with launch_dependent(true, ...). Work that reads nothing the previous kernel
//! writes may come before it. No-op on devices before sm_90 and without the attribute.
__device__ __forceinline__ void dependent_launch_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
//! First statement of a kernel that may be launched with launch_dependent(true, ...): lets the
//! next kernel be scheduled, then waits for the previous one.
__device__ __forceinline__ void dependent_launch_trigger_and_wait() {
  dependent_launch_trigger();
  dependent_launch_wait();
}

//! A cudaLaunchKernelEx configuration of `grid` x `block` threads, `smem` bytes of dynamic shared
//! memory on `stream`, with the first `count` of `attributes` (which must outlive the launch).
inline cudaLaunchConfig_t launch_config(unsigned grid, unsigned block, std::size_t smem, cudaStream_t stream,
                                        cudaLaunchAttribute* attributes, unsigned count) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = count;
  return config;
}

//! Launches kernel<<<grid, block, smem, stream>>>(args...), with programmatic dependent launch
//! when `pdl` (the kernel must start with dependent_launch_trigger_and_wait). A refused launch
//! throws canopy::error naming `what` (throw_cuda_error also clears it from the runtime).
template <class... Params, class... Args>
void launch_dependent(bool pdl, void (*kernel)(Params...), unsigned grid, unsigned block, std::size_t smem,
                      cudaStream_t stream, const char* what, Args... args) {
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  const cudaLaunchConfig_t config = launch_config(grid, block, smem, stream, attribute, pdl ? 1u : 0u);
  const cudaError_t status = cudaLaunchKernelEx(&config, kernel, Params(args)...);
  if (status != cudaSuccess) throw_cuda_error(static_cast<int>(status), what, __FILE__, __LINE__);
}

}  // namespace canopy::detail

#endif  // CANOPY_HAS_CUDA && __CUDACC__
