// bench/sat/sat_npp_baseline.cuh — NVIDIA NPP's integral image (nppiIntegral_8u32s_C1R_Ctx), the
// vendor library's summed-area table, for canopy-sat-bench's side-by-side ratio on single-channel
// u8 images. Built only where CMake finds NPP (CUDA::nppist; CANOPY_SAT_BENCH_NPP=1): the CUDA
// toolkit's full install has it, Debian's nvidia-cuda-toolkit packages do not.
//
// NPP writes an exclusive (width + 1) x (height + 1) table of signed 32-bit sums: its entry
// (x + 1, y + 1) is canopy's inclusive S(x, y). The adds wrap the same way, so the two agree bit for
// bit modulo 2^32, which is how the benchmark checks it.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/error.hpp>

#include <npp.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace sat_npp {

//! The NPP stream context of the canopy context's device and stream (NPP 13 takes it filled in by
//! the caller).
inline NppStreamContext stream_context(canopy::context& ctx) {
  NppStreamContext s{};
  s.hStream = ctx.stream();
  CANOPY_CUDA_CHECK(cudaGetDevice(&s.nCudaDeviceId));
  cudaDeviceProp p{};
  CANOPY_CUDA_CHECK(cudaGetDeviceProperties(&p, s.nCudaDeviceId));
  s.nMultiProcessorCount = p.multiProcessorCount;
  s.nMaxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
  s.nMaxThreadsPerBlock = p.maxThreadsPerBlock;
  s.nSharedMemPerBlock = p.sharedMemPerBlock;
  s.nCudaDevAttrComputeCapabilityMajor = p.major;
  s.nCudaDevAttrComputeCapabilityMinor = p.minor;
  CANOPY_CUDA_CHECK(cudaStreamGetFlags(s.hStream, &s.nStreamFlags));
  return s;
}

//! One integral image of a w x h u8 image into a (w + 1) x (h + 1) s32 table, on the context's stream.
class integral {
 public:
  integral(canopy::context& ctx, const std::uint8_t* image, int w, int h)
      : image_(image), w_(w), h_(h), table_(ctx, std::size_t(w + 1) * std::size_t(h + 1)), npp_(stream_context(ctx)) {}
  void run() {
    const NppStatus st = nppiIntegral_8u32s_C1R_Ctx(image_, w_, table_.data(), (w_ + 1) * int(sizeof(Npp32s)),
                                                    NppiSize{w_, h_}, 0, npp_);
    if (st != NPP_SUCCESS) throw std::runtime_error("nppiIntegral_8u32s_C1R_Ctx failed with NppStatus " + std::to_string(int(st)));
  }
  //! The table, (w + 1) x (h + 1), row-major.
  const canopy::buffer<Npp32s>& table() const { return table_; }
  //! Bytes NPP must move: the image once and its larger table once.
  double bytes() const { return double(w_) * h_ + double(w_ + 1) * (h_ + 1) * sizeof(Npp32s); }

 private:
  const std::uint8_t* image_;
  int w_, h_;
  canopy::buffer<Npp32s> table_;
  NppStreamContext npp_;
};

}  // namespace sat_npp
