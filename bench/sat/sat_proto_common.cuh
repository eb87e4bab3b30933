// bench/sat/sat_proto_common.cuh — small helpers shared by the SAT design prototypes
// (canopy-sat-warp-tiles, canopy-sat-staged): cache-policy loads and stores, cp.async with a
// cache policy and a partial wait, the CPU reference and its comparison, the RGBA8 row scan, and
// timing through canopy_bench::median_ms_on_stream. Bench code only; CUDA builds only.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <canopy/core/detail/bulk_copy.cuh>
#include <canopy/core/functional.hpp>
#include <canopy/structures/detail/sat_region_kernels.cuh>

#include "common/bench_common.hpp"

#define SAT_PROTO_CHECK(x)                                                                            \
  do {                                                                                                \
    const cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                          \
      std::printf("CUDA error in %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (0)

namespace sat_proto {

// Warp arithmetic on RGBA sums, the sm_90 pieces and the region parameters: the library's region
// kernel's (canopy/structures/detail/sat_region_kernels.cuh); warp scans, shuffles and named
// barriers: core's.
using canopy::detail::named_barrier;
using canopy::detail::shfl_idx;
using canopy::detail::warp_inclusive_scan;
using canopy::detail::sat_region::add4;
using canopy::detail::sat_region::ld_acquire_gpu;
using canopy::detail::sat_region::mbar_arrive;
using canopy::detail::sat_region::mbar_expect_tx;
using canopy::detail::sat_region::region_params;
using canopy::detail::sat_region::rgba_of_pairs;
using canopy::detail::sat_region::smid;
using canopy::detail::sat_region::stamp_index;
using canopy::detail::sat_region::sub4;
using canopy::detail::sat_region::sum_rows;
using canopy::detail::sat_region::warp_exclusive_sum4;
using canopy::detail::sat_region::warp_inclusive_sum4;
using canopy::detail::sat_region::warp_inclusive_sums;
using canopy::detail::sat_region::warp_sum4;

__device__ __forceinline__ std::uint64_t policy_evict_first() {
  std::uint64_t p;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ std::uint64_t policy_evict_last() {
  std::uint64_t p;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
//! 16-byte read-only load with an L2 cache policy.
__device__ __forceinline__ uint4 load_policy(const uint4* a, std::uint64_t pol) {
  uint4 v;
  asm("ld.global.nc.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(a), "l"(pol));
  return v;
}
//! 16-byte store with an L2 cache policy.
__device__ __forceinline__ void store_policy(uint4* a, uint4 v, std::uint64_t pol) {
  asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, %5;" ::"l"(a), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w), "l"(pol)
               : "memory");
}
//! 16-byte cp.async global -> shared with an L2 cache policy.
__device__ __forceinline__ void copy16_async(void* smem, const void* g, std::uint64_t pol) {
  const unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(s), "l"(g), "l"(pol) : "memory");
}
template <int N>
__device__ __forceinline__ void async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

//! A word another block publishes, read through L2 without ordering (spin-waits: a fence follows
//! the wait, not each poll).
__device__ __forceinline__ unsigned ld_relaxed_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

//! The GPU's global timer in ns (the same clock on every SM, unlike clock64).
__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

//! The same for two words (two packed pairs).
__device__ __forceinline__ void warp_inclusive_sum2(std::uint32_t& a, std::uint32_t& b, int lane) {
  std::uint32_t v[2] = {a, b};
  warp_inclusive_sums(v, lane);
  a = v[0];
  b = v[1];
}

//! Row scan of one warp row of RGBA8 pixels, 4 a lane (one 16-byte unit): channels R, B and G, A
//! as 16-bit pairs (a 128-px row sum of 8-bit values fits 16 bits). p*[k] = the lane's inclusive
//! prefix up to its pixel k; x* = the sum of the lanes before it (exclusive warp prefix).
__device__ __forceinline__ void row_scan_rgba8(uint4 unit, int lane, std::uint32_t (&pRB)[4], std::uint32_t (&pGA)[4],
                                               std::uint32_t& xRB, std::uint32_t& xGA) {
  const std::uint32_t w4[4] = {unit.x, unit.y, unit.z, unit.w};
  std::uint32_t sRB = 0, sGA = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    sRB += w4[k] & 0x00FF00FFu;
    sGA += (w4[k] >> 8) & 0x00FF00FFu;
    pRB[k] = sRB;
    pGA[k] = sGA;
  }
  xRB = sRB;
  xGA = sGA;
  warp_inclusive_sum2(xRB, xGA, lane);
  xRB -= sRB;
  xGA -= sGA;
}

//! Sums over rows of RGBA8 pixels, N words (pixels) a lane wherever they lie in the row, row after
//! row: each lane's N column sums and each row's sum, as the 16-bit pairs R|B and G|A (a row sum over
//! at most 257 px, and a column sum over up to 257 rows, fit 16 bits).
template <int N>
struct lane_sums {
  std::uint32_t cRB[N] = {}, cGA[N] = {};  // the lane's N columns
  std::uint32_t myRB = 0, myGA = 0;        // the sum of row `lane` (row index r == lane)
  //! Adds row r (the lane's words q of it); its sum goes to every lane in sRB, sGA.
  __device__ __forceinline__ void add_words(const std::uint32_t (&q)[N], int r, int lane, std::uint32_t& sRB, std::uint32_t& sGA) {
    std::uint32_t v[1][N], s1[1], s2[1];
#pragma unroll
    for (int u = 0; u < N; ++u) v[0][u] = q[u];
    sum_rows(v, cRB, cGA, s1, s2);
    sRB = s1[0];
    sGA = s2[0];
    if (lane == r) {
      myRB = sRB;
      myGA = sGA;
    }
  }
  //! Column k's sums (R, G, B, A) and row `lane`'s.
  __device__ __forceinline__ uint4 column(int k) const { return rgba_of_pairs(cRB[k], cGA[k]); }
  __device__ __forceinline__ uint4 row() const { return rgba_of_pairs(myRB, myGA); }
};

//! lane_sums over a warp row of RGBA8 pixels, 4 a lane (one 16-byte unit): K1's strip sums (a
//! 128-px row sum fits 16 bits).
struct strip_sums : lane_sums<4> {
  //! Adds row r; returns its sum (R, G, B, A) to every lane.
  __device__ __forceinline__ uint4 add_row(uint4 px, int r, int lane) {
    const std::uint32_t q[4] = {px.x, px.y, px.z, px.w};
    std::uint32_t sRB, sGA;
    add_words(q, r, lane, sRB, sGA);
    return rgba_of_pairs(sRB, sGA);
  }
};

// mbarriers and bulk copies (sm_90 and later): core's (canopy/core/detail/bulk_copy.cuh), plus the
// two forms it has no need of.
using canopy::detail::bulk_copy_to_shared;
using canopy::detail::mbarrier_arrive_expect_bytes;
using canopy::detail::mbarrier_init;
using canopy::detail::mbarrier_init_only;
using canopy::detail::mbarrier_init_visible;
using canopy::detail::mbarrier_wait;
using canopy::detail::shared_address;
//! Whether a CUDA device can be used; if not, says so as `program` (the caller exits 77: skipped).
inline bool cuda_device_present(const char* program) {
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess && cudaFree(nullptr) == cudaSuccess) return true;
  std::printf("%s: no CUDA device\n", program);
  return false;
}

//! Median microseconds of f() on the default stream: canopy_bench::median_ms_on_stream (3 warm-ups,
//! 25 CUDA-event runs behind the stream hold, so the GPU's work is timed, not the host's enqueue).
template <class F>
double timed_us(F f) {
  return 1000.0 * canopy_bench::median_ms_on_stream(nullptr, 3, 25, {}, f);
}

//! CPU reference: the u32 summed-area table of a w x h RGBA8 image (pixels as little-endian
//! words), 4 values per pixel, wrapping like the GPU.
inline std::vector<std::uint32_t> reference_sat_rgba8(const std::vector<std::uint32_t>& img, int w, int h) {
  std::vector<std::uint32_t> ref(img.size() * 4);
  for (int y = 0; y < h; ++y) {
    std::uint32_t acc[4] = {0, 0, 0, 0};
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 4; ++c) {
        acc[c] += (img[std::size_t(y) * w + x] >> (8 * c)) & 0xFFu;
        const std::size_t i = (std::size_t(y) * w + x) * 4 + c;
        ref[i] = acc[c] + (y ? ref[i - std::size_t(w) * 4] : 0u);
      }
  }
  return ref;
}

//! Entries of `got` that differ from `ref`; prints the first few as (x, y, c).
inline std::size_t count_mismatches(const std::vector<std::uint32_t>& got, const std::vector<std::uint32_t>& ref, int w) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (got[i] != ref[i]) {
      if (bad < 4)
        std::printf("  mismatch x=%d y=%d c=%d: %u vs %u\n", int(i / 4 % std::size_t(w)), int(i / 4 / std::size_t(w)), int(i % 4),
                    got[i], ref[i]);
      ++bad;
    }
  return bad;
}

//! The comma-separated items of a configuration list.
inline std::vector<std::string> config_items(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t j = std::min(s.find(',', i), s.size());
    out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

//! Extra builds of every configuration, each checked against the reference (--checked-builds N;
//! the region prototypes run them): a race that shows only now and then gets N more chances.
inline int checked_builds = 0;

//! The command line of the configurable prototypes: --small (odd sizes only), --timed (timed sizes
//! only), --configs (both timed sizes), --configs-4k, --configs-8k, --checked-builds N. Returns -1
//! to go on, otherwise the exit code (after a usage line naming `syntax`).
inline int config_command_line(int argc, char** argv, const char* program, const char* syntax, bool& small_only, bool& timed_only,
                               std::string& c4, std::string& c8) {
  try {
    canopy_bench::command_line cl(argc, argv, program);
    while (cl.next()) {
      if (cl.is("--small")) small_only = true;
      else if (cl.is("--timed")) timed_only = true;
      else if (cl.is("--configs")) c4 = c8 = cl.value();
      else if (cl.is("--configs-4k")) c4 = cl.value();
      else if (cl.is("--configs-8k")) c8 = cl.value();
      else if (cl.is("--checked-builds")) checked_builds = canopy_bench::parse_int(cl.value(), program, "--checked-builds", 0, 100000);
      else cl.refuse_unknown();
    }
  } catch (const canopy_bench::bad_flag& e) {
    std::printf("%s\nusage: %s [--small | --timed] [--configs %s,... | --configs-4k ... --configs-8k ...] [--checked-builds N]\n", e.what(),
                program, syntax);
    return canopy_bench::exit_bad_command_line;
  }
  return cuda_device_present(program) ? -1 : 77;
}

//! One test image of the prototypes: random RGBA8 pixels (seeded by the size), or every channel
//! 255 (`bright`: the largest sums, so 16-bit partial sums that can overflow do), on the device, a
//! table and a copy target there, the CPU reference table, and for timed sizes the bandwidth of a
//! device-to-device copy of a table-sized buffer in the same run (printed).
struct test_image {
  int w, h;
  bool bright;
  std::size_t npx;
  std::vector<std::uint32_t> img, ref, got;
  std::uint32_t* dimg = nullptr;
  uint4 *dtab = nullptr, *dcopy = nullptr;
  double bytes, copy_gbps = 0.0;  // image + table bytes; copy GB/s (timed sizes)
  test_image(int w_, int h_, bool timed, bool bright_ = false)
      : w(w_), h(h_), bright(bright_), npx(std::size_t(w_) * h_), img(npx), got(npx * 4), bytes(double(npx) * 20.0) {
    std::mt19937 rng(unsigned(w * 7 + h));
    for (auto& v : img) v = bright ? 0xFFFFFFFFu : rng();
    SAT_PROTO_CHECK(cudaMalloc(&dimg, npx * 4));
    SAT_PROTO_CHECK(cudaMalloc(&dtab, npx * 16));
    SAT_PROTO_CHECK(cudaMalloc(&dcopy, npx * 16));
    SAT_PROTO_CHECK(cudaMemcpy(dimg, img.data(), npx * 4, cudaMemcpyHostToDevice));
    ref = reference_sat_rgba8(img, w, h);
    if (timed) {
      const double copy = timed_us([&] { cudaMemcpyAsync(dcopy, dtab, npx * 16, cudaMemcpyDeviceToDevice); });
      copy_gbps = 2.0 * npx * 16 / copy * 1e-3;
      std::printf("%dx%d: copy %.1f us (%.0f GB/s)\n", w, h, copy, copy_gbps);
    }
  }
  //! Waits for the GPU, then compares the table with the reference; if they differ, says so for
  //! `what` and `when` and clears `all_ok`.
  bool table_exact(const std::string& what, const char* when, bool& all_ok) {
    SAT_PROTO_CHECK(cudaGetLastError());
    SAT_PROTO_CHECK(cudaDeviceSynchronize());
    SAT_PROTO_CHECK(cudaMemcpy(got.data(), dtab, npx * 16, cudaMemcpyDeviceToHost));
    const std::size_t bad = count_mismatches(got, ref, w);
    if (bad) {
      std::printf("  %dx%d%s %s: WRONG %s (%zu bad)\n", w, h, label(), what.c_str(), when, bad);
      all_ok = false;
    }
    return bad == 0;
  }
  //! " all-255" for the bright image, "" for a random one (to follow the size in reports).
  const char* label() const { return bright ? " all-255" : ""; }
  ~test_image() {
    cudaFree(dimg);
    cudaFree(dtab);
    cudaFree(dcopy);
  }
  test_image(const test_image&) = delete;
  test_image& operator=(const test_image&) = delete;
};

//! A build's stamps, copied to the host after the GPU is done: `blocks` x `nstamp` x `max_chunks`
//! words (globaltimer ns, or counts where a prototype says so).
struct stamp_table {
  std::vector<unsigned long long> v;
  int nstamp, max_chunks;
  stamp_table(const unsigned long long* dev, int blocks, int nstamp_, int max_chunks_)
      : v(std::size_t(blocks) * nstamp_ * max_chunks_), nstamp(nstamp_), max_chunks(max_chunks_) {
    SAT_PROTO_CHECK(cudaDeviceSynchronize());
    SAT_PROTO_CHECK(cudaMemcpy(v.data(), dev, v.size() * 8, cudaMemcpyDeviceToHost));
  }
  unsigned long long raw(int b, int s, int c) const { return v[stamp_index(b, s, c, nstamp, max_chunks)]; }
  double at(int b, int s, int c) const { return double(raw(b, s, c)); }
  //! The earliest stamp s of chunk c over the blocks (the origin of a timeline).
  double earliest(int s, int c) const {
    const int blocks = int(v.size() / (std::size_t(nstamp) * max_chunks));
    double t = 1e300;
    for (int b = 0; b < blocks; ++b) t = std::min(t, at(b, s, c));
    return t;
  }
};

//! The global buffers of the prototypes whose blocks hold regions of a chunk (canopy-sat-resident,
//! canopy-sat-pipelined, canopy-sat-lookahead): `slots` slots (three unless asked) of every region's
//! row sums (up to 258 rows, up to 16 bytes a row), column sums (up to 256 px, 8 bytes a pixel) and
//! total (16 bytes), one
//! grid-barrier counter a chunk (`max_chunks`), and `nstamp` globaltimer stamps a block and chunk.
//! `epoch` counts the builds since the counters were cleared.
struct region_exchange {
  int sms = 0;
  uint2 *rowsum = nullptr, *colsum = nullptr;
  uint4* total = nullptr;
  unsigned* cnt = nullptr;
  unsigned long long* stamps = nullptr;
  unsigned epoch = 0;
  int max_chunks, slots;
  region_exchange(int max_chunks_, int nstamp, int slots_ = 3) : max_chunks(max_chunks_), slots(slots_) {
    SAT_PROTO_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    SAT_PROTO_CHECK(cudaMalloc(&rowsum, row_bytes()));
    SAT_PROTO_CHECK(cudaMalloc(&colsum, col_bytes()));
    SAT_PROTO_CHECK(cudaMalloc(&total, total_bytes()));
    SAT_PROTO_CHECK(cudaMalloc(&cnt, std::size_t(max_chunks) * 4));
    SAT_PROTO_CHECK(cudaMalloc(&stamps, std::size_t(sms) * nstamp * max_chunks * 8));
  }
  ~region_exchange() {
    cudaFree(rowsum);
    cudaFree(colsum);
    cudaFree(total);
    cudaFree(cnt);
    cudaFree(stamps);
  }
  std::size_t row_bytes() const { return std::size_t(slots) * sms * 258 * 16; }
  std::size_t col_bytes() const { return std::size_t(slots) * sms * 256 * 8; }
  std::size_t total_bytes() const { return std::size_t(slots) * sms * 16; }
  //! Zeroes every slot.
  void clear_slots() {
    SAT_PROTO_CHECK(cudaMemset(rowsum, 0, row_bytes()));
    SAT_PROTO_CHECK(cudaMemset(colsum, 0, col_bytes()));
    SAT_PROTO_CHECK(cudaMemset(total, 0, total_bytes()));
  }
  region_exchange(const region_exchange&) = delete;
  region_exchange& operator=(const region_exchange&) = delete;
  //! Chunks of a height-H image whose first chunk has R0 rows and the others R; the first row of
  //! the last chunk goes to `last_start`.
  static int chunks_of(int H, int R0, int R, int& last_start) {
    return canopy::detail::sat_region::chunks_of(H, R0, R, last_start);
  }
  //! Starts a plan: a W x H image cut into region columns RW px wide (W must be a multiple), up to
  //! Gy region rows a chunk (fewer when Gx x Gy would pass the SMs), these buffers. Says why not.
  bool begin_plan(region_params& p, const std::uint32_t* img, uint4* tab, int W, int H, int RW, int Gy, std::string& why) const {
    if (W % RW) {
      why = "width not a multiple of " + std::to_string(RW);
      return false;
    }
    p.img = img;
    p.tab = tab;
    p.W = W;
    p.H = H;
    p.Gx = W / RW;
    p.Gy = std::max(1, std::min(Gy, sms / p.Gx));
    p.rowsum = rowsum;
    p.colsum = colsum;
    p.total = total;
    p.cnt = cnt;
    return true;
  }
  //! Sets up the next build: a new epoch (except for the empty kernel, mode 3, which counts
  //! nothing), its barrier target, and the stamps if asked for.
  void next_build(region_params& p, int mode, bool stamped) {
    p.mode = mode;
    if (mode != 3) ++epoch;
    p.target = epoch * unsigned(p.Gx * p.Gy);
    p.stamps = stamped ? stamps : nullptr;
  }
  //! The checks every plan makes: Gx region columns fit the SMs, `chunks` fit the counters, and
  //! one block of `kernel` (`threads` threads, `smem` bytes, the attribute set here) fits an SM.
  //! On success the counters are cleared: a new plan starts a new count.
  bool fits(int Gx, int chunks, const void* kernel, int threads, std::size_t smem, std::string& why) {
    if (Gx > sms) why = std::to_string(Gx) + " region columns for " + std::to_string(sms) + " SMs";
    else if (chunks > max_chunks) why = std::to_string(chunks) + " chunks";
    else if (smem > 227 * 1024) why = std::to_string(smem) + " bytes of shared memory";
    else {
      SAT_PROTO_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      int per_sm = 0;
      SAT_PROTO_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
      if (per_sm < 1) why = "no block fits an SM";
    }
    if (!why.empty()) return false;
    SAT_PROTO_CHECK(cudaMemset(cnt, 0, std::size_t(max_chunks) * 4));
    epoch = 0;
    return true;
  }
};

//! The configurable prototypes' driver. Reads the command line (config_command_line), parses every
//! configuration list up front (parse(list, program) exits on a bad one), then for each size makes
//! its test_image (checked sizes twice: random, then all-255) and calls body(ti, timed, configs,
//! all_ok): sizes of 3840 px and wider are timed
//! (and skipped with --small) with c4's configurations, or c8's from 7680 px; smaller ones, checked
//! only, get `small_configs` (c4's when empty). Prints "program: ok" or FAILED and returns the exit
//! code.
template <class Parse, class Body>
int run_prototype(int argc, char** argv, const char* program, const char* syntax, std::string c4, std::string c8,
                  const std::string& small_configs, const std::vector<std::array<int, 2>>& sizes, Parse parse, Body body) {
  bool small_only = false, timed_only = false;
  if (const int rc = config_command_line(argc, argv, program, syntax, small_only, timed_only, c4, c8); rc >= 0) return rc;
  const auto k4 = parse(c4, program), k8 = parse(c8, program), ks = small_configs.empty() ? k4 : parse(small_configs, program);
  bool all_ok = true;
  for (const auto& sz : sizes) {
    const int w = sz[0], h = sz[1];
    const bool timed = w >= 3840;
    if ((small_only && timed) || (timed_only && !timed)) continue;
    for (int bright = 0; bright < (timed ? 1 : 2); ++bright) {  // checked sizes also as an all-255 image
      test_image ti(w, h, timed, bright != 0);
      body(ti, timed, w >= 7680 ? k8 : timed ? k4 : ks, all_ok);
    }
  }
  std::printf("%s: %s\n", program, all_ok ? "ok" : "FAILED (tables differ from the reference)");
  return all_ok ? 0 : 1;
}

}  // namespace sat_proto
