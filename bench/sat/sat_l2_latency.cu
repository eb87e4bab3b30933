// canopy-sat-l2-latency: how long one L2 round trip takes while the GPU streams stores, the cost of
// every look-back step of the SAT kernels (CUDA only, not run by CTest; docs/sat.md, session 12).
//
// One warp (block 0, warp 0, alone on its SM: one 256-thread block per SM) chases pointers through
// an 8 KB table that stays in L2, one dependent load per probe, 2000 cycles apart, and records each
// load's latency in SM cycles (clock64 before the load and after a shared-memory store of its value,
// which cannot issue before the value is back). The other warps of the grid meanwhile stream 16-byte
// stores (each warp instruction 512 contiguous bytes, 8 in flight a warp) over a 2 GB buffer, until
// the probe is done. Traffic cases:
//   idle                      nobody stores
//   other SMs write           every SM but the prober's
//   own SM writes             only the prober's SM (its 7 other warps)
//   all SMs write             both
//   all SMs copy              loads and stores (a copy) instead of stores only
//   prober stores 16 KB + all before each probe the prober's warp itself stores 16 KB (a tile's
//                             stores, then its look-back)
//   bulk stores, other / all  the copy engine stores 4 KB at a time from shared memory
//                             (cp.async.bulk, 8 groups in flight a warp; sm_90)
// Probes: `ld.relaxed.gpu` (the look-backs' tagged-word load) and, on sm_90, a 16-byte
// cp.async.bulk read completing on an mbarrier (the copy engine's path).
// Prints percentiles of the probe latency and the storers' rate. Exits 77 without a device.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <canopy/structures/detail/sat_kernels.cuh>  // load_tagged

#include "sat_proto_common.cuh"

#define CK SAT_PROTO_CHECK

namespace {

constexpr int kChase = 1024;          // words of the pointer-chase table (8 KB)
constexpr int kStoreWarps = 8;        // warps per block
constexpr int kProberStoreUnits = 1024;  // 16 KB of the prober's own stores before a probe
enum traffic : unsigned { other_sms = 1, own_sm = 2, copying = 4, prober_stores = 8, bulk_stores = 16 };

struct probe_params {
  const unsigned long long* chase;
  uint4* buf;
  const uint4* src;
  size_t units;  // uint4 in buf and src
  unsigned* stop;
  long long* samples;
  unsigned long long* bytes;
  int probes;
  unsigned mode;
  int method;  // 0 ld.relaxed.gpu, 1 cp.async.bulk
  int batch;   // storers' 512-byte stores (in groups of 8) between two looks at the stop flag
};

// One probe through the copy engine: 16 bytes into shared memory, waited for on the mbarrier.
__device__ __forceinline__ unsigned long long load_bulk(const unsigned long long* p, unsigned long long* dst, unsigned long long* mbar,
                                                        unsigned& phase) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  sat_proto::mbarrier_arrive_expect_bytes(mbar, 16);
  sat_proto::bulk_copy_to_shared<false>(dst, p, 16, mbar, 0);
  sat_proto::mbarrier_wait(mbar, phase);
  phase ^= 1u;
  return *reinterpret_cast<volatile unsigned long long*>(dst);
#else
  __trap();
  return 0;
#endif
}

__global__ void __launch_bounds__(kStoreWarps * 32, 1) probe_kernel(probe_params q) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) unsigned long long mbar;
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
  if (blockIdx.x == 0 && warp == 0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (lane == 0) {
      sat_proto::mbarrier_init(&mbar, 1);
    }
#endif
    __syncwarp();
    const unsigned long long t0 = sat_proto::global_ns();
    while (sat_proto::global_ns() - t0 < 20000) {  // let the storers get going
    }
    uint4* own = q.buf + q.units - kProberStoreUnits;  // the prober's own region
    unsigned long long* words = reinterpret_cast<unsigned long long*>(smem);
    unsigned long long idx = 0;
    unsigned phase = 0;
    for (int i = 0; i < q.probes; ++i) {
      if (q.mode & prober_stores)
        for (int k = 0; k < kProberStoreUnits / 32; ++k) __stcs(own + 32 * k + lane, make_uint4(i, k, 0, 0));
      if (lane == 0) {
        const long long c0 = clock64();
        if (q.method == 0) idx = canopy::detail::sat::load_tagged(q.chase + idx);  // the look-backs' load
        else idx = load_bulk(q.chase + 2 * (idx & (kChase / 2 - 1)), words, &mbar, phase);
        idx &= kChase - 1;
        reinterpret_cast<volatile unsigned long long*>(words)[2] = idx;  // waits for the value
        q.samples[i] = clock64() - c0;
      }
      __syncwarp();
      const long long c1 = clock64();
      while (clock64() - c1 < 2000) {
      }
    }
    if (lane == 0) {
      q.samples[q.probes] = (long long)idx;  // keeps the chase
      atomicExch(q.stop, 1u);
    }
    return;
  }
  const bool stores = blockIdx.x == 0 ? (q.mode & own_sm) != 0 : (q.mode & other_sms) != 0;
  if (!stores) return;
  const size_t gw = size_t(blockIdx.x) * kStoreWarps + warp, nw = size_t(gridDim.x) * kStoreWarps;
  const size_t per = (q.units - kProberStoreUnits) / nw / 256 * 256;  // each warp its own region
  uint4* base = q.buf + gw * per;
  const uint4* sbase = q.src + gw * per;
  size_t off = 0;
  unsigned long long n = 0;
  if (q.mode & bulk_stores) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const unsigned from = unsigned(__cvta_generic_to_shared(smem + 4096 * (warp + 1)));
    for (;;) {
      if (lane == 0)
        for (int k = 0; k < 16; ++k) {
          asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 4096;" ::"l"(base + off), "r"(from) : "memory");
          asm volatile("cp.async.bulk.commit_group;" ::: "memory");
          asm volatile("cp.async.bulk.wait_group.read 8;" ::: "memory");
          off = off + 512 > per ? 0 : off + 256;
        }
      n += 16 * 8;  // 4 KB = 8 x 512 B
      if (*reinterpret_cast<volatile unsigned*>(q.stop)) break;
      __syncwarp();
    }
    if (lane == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
    __trap();
#endif
  } else {
    const bool copy = (q.mode & copying) != 0;
    const uint4 v = make_uint4(unsigned(gw), 1, 2, 3);
    for (;;) {
      for (int b = 0; b < q.batch; b += 8) {
        uint4 x[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) x[j] = copy ? __ldcs(sbase + off + 32 * j + lane) : v;
#pragma unroll
        for (int j = 0; j < 8; ++j) __stcs(base + off + 32 * j + lane, x[j]);
        off = off + 512 > per ? 0 : off + 256;
        n += 8;
      }
      if (*reinterpret_cast<volatile unsigned*>(q.stop)) break;
    }
  }
  if (lane == 0) atomicAdd(q.bytes, n * 512ull * ((q.mode & copying) ? 2 : 1));
}

}  // namespace

//   canopy-sat-l2-latency [--probes N] [--batch B]
// N: probes per case (default 3000; small for sanitizers). B: 512-byte stores each storer warp
// issues between two looks at the stop flag (8, 16, ... 256; default 8): larger B, a little more
// store pressure (the flag read is an L2 round trip of its own).
int main(int argc, char** argv) {
  const char* program = "canopy-sat-l2-latency";
  int probes = 3000, batch = 8;
  try {
    canopy_bench::command_line cl(argc, argv, program);
    while (cl.next()) {
      if (cl.is("--probes")) probes = cl.int_value(10, 1000000);
      else if (cl.is("--batch")) {
        batch = cl.int_value(8, 256);
        if (batch % 8) throw canopy_bench::bad_flag(std::string(program) + ": argument '--batch': " + std::to_string(batch) + " is not a multiple of 8");
      } else cl.refuse_unknown();
    }
  } catch (const canopy_bench::bad_flag& e) {
    std::printf("%s\nusage: %s [--probes N] [--batch B]\n", e.what(), program);
    return canopy_bench::exit_bad_command_line;
  }
  if (!sat_proto::cuda_device_present(program)) return 77;
  int device = 0;
  CK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, device));
  const bool sm90 = prop.major >= 9;
  int khz = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device);
  std::printf("%s, %d SMs, SM clock %.0f MHz (nominal)\n", prop.name, prop.multiProcessorCount, khz / 1e3);
  probe_params q{};
  q.probes = probes;
  q.batch = batch;
  std::vector<unsigned long long> chase(2 * kChase);
  for (int i = 0; i < 2 * kChase; ++i) chase[i] = (unsigned long long)((i * 97 + 13) % kChase);  // a cycle through the table
  unsigned long long* dchase;
  CK(cudaMalloc(&dchase, chase.size() * 8));
  CK(cudaMemcpy(dchase, chase.data(), chase.size() * 8, cudaMemcpyHostToDevice));
  q.chase = dchase;
  q.units = (size_t(2) << 30) / 16;
  uint4* src;
  CK(cudaMalloc(&q.buf, q.units * 16));
  CK(cudaMalloc(&src, q.units * 16));
  CK(cudaMemset(q.buf, 1, q.units * 16));
  CK(cudaMemset(src, 1, q.units * 16));
  q.src = src;
  CK(cudaMalloc(&q.stop, 4));
  CK(cudaMalloc(&q.samples, (probes + 1) * 8));
  CK(cudaMalloc(&q.bytes, 8));
  // 150 KB of dynamic shared memory: room for the bulk stores' sources (4 KB a warp after the
  // prober's words), and one block per SM, so block 0's SM runs nothing else.
  constexpr int smem = 150 * 1024;
  static_assert(4096 * (kStoreWarps + 1) <= smem, "the bulk stores' sources fit");
  CK(cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  struct traffic_case { const char* name; unsigned mode; bool needs_sm90; };
  const traffic_case cases[] = {
      {"idle", 0, false},
      {"other SMs write", other_sms, false},
      {"own SM writes", own_sm, false},
      {"all SMs write", other_sms | own_sm, false},
      {"all SMs copy", other_sms | own_sm | copying, false},
      {"prober stores 16 KB + all SMs write", other_sms | own_sm | prober_stores, false},
      {"bulk stores, other SMs", other_sms | bulk_stores, true},
      {"bulk stores, all SMs", other_sms | own_sm | bulk_stores, true},
  };
  std::printf("storers look at the stop flag every %d stores of 512 bytes\n", batch);
  std::printf("%-8s %-36s %8s %8s %8s %8s %10s\n", "probe", "traffic", "p10", "p50", "p90", "p99", "storers");
  for (int method = 0; method < 2; ++method) {
    if (method == 1 && !sm90) break;
    for (const traffic_case& c : cases) {
      if (c.needs_sm90 && !sm90) continue;
      q.mode = c.mode;
      q.method = method;
      CK(cudaMemset(q.stop, 0, 4));
      CK(cudaMemset(q.bytes, 0, 8));
      cudaEvent_t a, b;
      CK(cudaEventCreate(&a));
      CK(cudaEventCreate(&b));
      CK(cudaEventRecord(a));
      probe_kernel<<<prop.multiProcessorCount, kStoreWarps * 32, smem>>>(q);
      CK(cudaGetLastError());
      CK(cudaEventRecord(b));
      CK(cudaDeviceSynchronize());
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      std::vector<long long> s(probes + 1);
      unsigned long long bytes = 0;
      CK(cudaMemcpy(s.data(), q.samples, (probes + 1) * 8, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(&bytes, q.bytes, 8, cudaMemcpyDeviceToHost));
      s.resize(probes);
      std::sort(s.begin(), s.end());
      std::printf("%-8s %-36s %8lld %8lld %8lld %8lld %6.0f GB/s\n", method ? "bulk16" : "ld.gpu", c.name, s[probes / 10], s[probes / 2],
                  s[probes * 9 / 10], s[probes * 99 / 100], double(bytes) / (ms * 1e-3) * 1e-9);
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  }
  std::printf("canopy-sat-l2-latency: latencies in SM cycles; storers' rate over the whole kernel, start-up included\n");
  return 0;
}
