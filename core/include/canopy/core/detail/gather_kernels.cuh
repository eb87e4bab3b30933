// canopy/core/detail/gather_kernels.cuh — record gather/scatter kernels.
//
// A record of record_bytes is moved as words_per_record words of W bytes (W = 16, 8 or 4). Thread t
// of the grid-stride loop moves word t % words_per_record of record t / words_per_record, so the
// words_per_record threads of one record are neighbours in the warp: one 16-byte access each,
// together one contiguous record read and one contiguous record write.
#pragma once

#include <canopy/core/config.hpp>

#include <cstddef>
#include <cstdint>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy::detail {

//! scatter == false: out[r] = in[index[r]];
//! scatter == true:  out[index[r]] = in[r].   r < records; limit is the addressed buffer's count.
//! Index entries >= limit are skipped and raise `bad_index` (the context's device_check flag, which
//! its next synchronisation reports), so that no access leaves the buffers.
template <class W, bool Scatter>
__global__ void __launch_bounds__(256) move_records_kernel(const W* __restrict__ in, W* __restrict__ out,
                                                           const std::uint32_t* __restrict__ index,
                                                           std::size_t records, std::uint32_t words_per_record,
                                                           std::size_t limit, unsigned* bad_index) {
  const std::size_t total = records * words_per_record;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t t = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += stride) {
    const std::size_t r = t / words_per_record;
    const std::size_t w = t - r * words_per_record;
    const std::size_t target = __ldg(index + r);
    if (target >= limit) {
      if (w == 0) *reinterpret_cast<volatile unsigned*>(bad_index) = 1u;
      continue;
    }
    if (Scatter)
      out[target * words_per_record + w] = in[r * words_per_record + w];
    else
      out[r * words_per_record + w] = in[target * words_per_record + w];
  }
}

}  // namespace canopy::detail

#endif
