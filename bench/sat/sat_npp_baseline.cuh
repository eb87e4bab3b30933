// bench/sat/sat_npp_baseline.cuh — NVIDIA NPP's integral image (nppiIntegral_8u32s_C1R_Ctx), the
// vendor library's summed-area table, for canopy-sat-bench's side-by-side ratio on u8 images of 1
// channel (R8) and, split into planes first, of 4 (RGBA8). Built only where CMake finds NPP (npp.h,
// CUDA::nppist, CUDA::nppidei; CANOPY_SAT_BENCH_NPP=1): the CUDA toolkit's full install has it, a
// toolkit without NPP does not.
//
// NPP writes, a channel, an exclusive (width + 1) x (height + 1) table of signed 32-bit sums: its
// entry (x + 1, y + 1) is canopy's inclusive S(x, y, c). The adds wrap the same way, so the two agree
// bit for bit modulo 2^32, which is how the benchmark checks it.
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
//! the caller), from what the context already knows of its device.
inline NppStreamContext stream_context(canopy::context& ctx) {
  const canopy::device_info& d = ctx.device();
  NppStreamContext s{};
  s.hStream = ctx.stream();
  s.nCudaDeviceId = d.ordinal;
  s.nMultiProcessorCount = d.multiprocessors;
  s.nMaxThreadsPerMultiProcessor = d.max_threads_per_multiprocessor;
  s.nCudaDevAttrComputeCapabilityMajor = d.compute_capability_major;
  s.nCudaDevAttrComputeCapabilityMinor = d.compute_capability_minor;
  int shared_per_block = 0;  // not in device_info: the default (not opt-in) limit a block
  CANOPY_CUDA_CHECK(cudaDeviceGetAttribute(&s.nMaxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock, d.ordinal));
  CANOPY_CUDA_CHECK(cudaDeviceGetAttribute(&shared_per_block, cudaDevAttrMaxSharedMemoryPerBlock, d.ordinal));
  s.nSharedMemPerBlock = std::size_t(shared_per_block);
  CANOPY_CUDA_CHECK(cudaStreamGetFlags(s.hStream, &s.nStreamFlags));
  return s;
}

//! NPP's integral image of a w x h u8 image with 1 or 4 interleaved channels, on the context's
//! stream. NPP's integral takes one channel, so a 4-channel image is first split into planes
//! (nppiCopy_8u_C4P4R_Ctx) and each plane integrated: what an NPP user does with RGBA8. The tables
//! are planar, one (w + 1) x (h + 1) s32 table a channel.
class integral {
 public:
  integral(canopy::context& ctx, const std::uint8_t* image, int w, int h, int channels)
      : image_(image), w_(w), h_(h), c_(channels), planes_(ctx, channels == 4 ? std::size_t(w) * std::size_t(h) * 4 : 0),
        table_(ctx, std::size_t(w + 1) * std::size_t(h + 1) * std::size_t(channels)), npp_(stream_context(ctx)) {
    if (channels != 1 && channels != 4) throw std::invalid_argument("sat_npp::integral: channels must be 1 or 4");
  }
  void run() {
    if (c_ == 1) {
      integrate(image_, 0);
      return;
    }
    Npp8u* const planes[4] = {plane(0), plane(1), plane(2), plane(3)};
    check(nppiCopy_8u_C4P4R_Ctx(image_, 4 * w_, planes, w_, NppiSize{w_, h_}, npp_), "nppiCopy_8u_C4P4R_Ctx");
    for (int c = 0; c < 4; ++c) integrate(plane(c), c);
  }
  //! Channel c's table, (w + 1) x (h + 1), row-major; entry (x + 1, y + 1) is S(x, y, c).
  std::size_t index(int x, int y, int c) const {
    return std::size_t(c) * std::size_t(w_ + 1) * std::size_t(h_ + 1) + std::size_t(y + 1) * std::size_t(w_ + 1) + std::size_t(x + 1);
  }
  const canopy::buffer<Npp32s>& tables() const { return table_; }
  //! Bytes NPP must move at least: the image once and its larger tables once (the planes between
  //! them are not counted).
  double bytes() const { return double(w_) * h_ * c_ + double(w_ + 1) * (h_ + 1) * c_ * sizeof(Npp32s); }
  //! What ran, for the report.
  const char* name() const { return c_ == 1 ? "nppiIntegral_8u32s_C1R" : "nppiCopy_8u_C4P4R + 4 x nppiIntegral_8u32s_C1R"; }

 private:
  Npp8u* plane(int c) { return planes_.data() + std::size_t(c) * std::size_t(w_) * std::size_t(h_); }
  void integrate(const Npp8u* src, int c) {
    Npp32s* dst = table_.data() + index(-1, -1, c);  // the plane's first entry
    check(nppiIntegral_8u32s_C1R_Ctx(src, w_, dst, (w_ + 1) * int(sizeof(Npp32s)), NppiSize{w_, h_}, 0, npp_),
          "nppiIntegral_8u32s_C1R_Ctx");
  }
  static void check(NppStatus st, const char* what) {
    if (st != NPP_SUCCESS) throw std::runtime_error(std::string(what) + " failed with NppStatus " + std::to_string(int(st)));
  }

  const std::uint8_t* image_;
  int w_, h_, c_;
  canopy::buffer<Npp8u> planes_;
  canopy::buffer<Npp32s> table_;
  NppStreamContext npp_;
};

}  // namespace sat_npp
