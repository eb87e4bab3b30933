// canopy-sat-staged: a measuring prototype (not the library's kernel; CUDA builds only, not run by
// CTest) of a dependency-free SAT for RGBA8 -> u32 in three kernels, Nehab et al.'s "a small pass
// over tile sums" with the second image read meant to come from L2:
//   K1 (q1): per 16-row band and 128-px strip (one warp, all 16 row loads in flight, image loaded
//            with an L2 evict_last policy): row sums, column sums, band totals;
//   K2 (q2): exclusive prefixes of those over bands (column carries at 32-row tile rows, strip
//            totals) and over strips (row carries), 32 loads in flight per thread;
//   K3 (q3): per 32-row tile row and strip (one warp, no block barrier): the image rows through an
//            8-row cp.async ring, row scans, table rows through the library's 2 KB store stage
//            (stage_segment, store_staged_row: 512 contiguous bytes a store instruction); the
//            carries from K2 and a strip-prefix of the totals.
// Diagnostics: K3 without image loads (synthetic pixels), K3 without stores, K3 after an L2 flush
// (200 MB written), a write-only kernel with K3's warp-to-row map, and a plain read of the image.
// Every table is checked exactly against a CPU reference (widths multiple of 128); timings are
// canopy_bench::median_ms_on_stream medians (25 held-stream CUDA-event runs), against a
// device-to-device copy of a table-sized buffer measured in the same run. Results: docs/sat.md,
// "Other decompositions (session 11)". Exits 1 if a table is wrong.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <random>
#include <algorithm>
#include <cstring>
#include <string>

#include <canopy/structures/detail/sat_kernels.cuh>

#include "sat_proto_common.cuh"

using namespace sat_proto;
#define CK SAT_PROTO_CHECK

constexpr int HT = 32;   // rows of a K3 tile row
constexpr int SW = 128;  // pixels of a strip
constexpr int H1 = 16;   // rows of a K1 band (column sums and totals at this granularity)

// A warp's piece of work: strip tj (128 px, 4 a lane) of the band of `band_rows` rows ti.
struct warp_strip {
  int lane, ti, tj, y0, x0, rows;
  const uint4* src;  // this lane's 16-byte unit in the band's first row
  size_t stride;     // uint4 per image row
  __device__ warp_strip(const uint32_t* img, int w, int h, int TW, int band_rows) {
    lane = threadIdx.x & 31;
    const int wid = blockIdx.x * 8 + (threadIdx.x >> 5);
    ti = wid / TW;
    tj = wid % TW;
    y0 = ti * band_rows;
    x0 = tj * SW;
    rows = min(band_rows, h - y0);
    src = reinterpret_cast<const uint4*>(img + size_t(y0) * w + x0) + lane;
    stride = size_t(w) / 4;
  }
};

// K1: warp per (16-row band ti1, 128-px strip tj).
__global__ void __launch_bounds__(256) q1(const uint32_t* __restrict__ img, int w, int h, int TW, int TH1, uint4* colsum, uint4* rowsum, uint4* total) {
  const warp_strip ws(img, w, h, TW, H1);
  if (ws.ti >= TH1) return;
  const int lane = ws.lane, ti = ws.ti, tj = ws.tj, y0 = ws.y0, x0 = ws.x0, rows = ws.rows;
  const uint4* src = ws.src;
  const size_t stride = ws.stride;
  const uint64_t pol = policy_evict_last();
  uint4 p[H1];
#pragma unroll
  for (int i = 0; i < H1; ++i) p[i] = i < rows ? load_policy(src + i * stride, pol) : make_uint4(0, 0, 0, 0);
  uint32_t cRB[4] = {0, 0, 0, 0}, cGA[4] = {0, 0, 0, 0};
  uint32_t myRB = 0, myGA = 0;
#pragma unroll
  for (int i = 0; i < H1; ++i) {
    const uint32_t q[4] = {p[i].x, p[i].y, p[i].z, p[i].w};
    uint32_t sRB = 0, sGA = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint32_t rb = q[k] & 0x00FF00FFu, ga = (q[k] >> 8) & 0x00FF00FFu;
      cRB[k] += rb; cGA[k] += ga; sRB += rb; sGA += ga;
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) { sRB += __shfl_xor_sync(~0u, sRB, o); sGA += __shfl_xor_sync(~0u, sGA, o); }
    if (lane == i) { myRB = sRB; myGA = sGA; }
  }
  if (lane < rows) rowsum[size_t(y0 + lane) * TW + tj] = make_uint4(myRB & 0xFFFFu, myGA & 0xFFFFu, myRB >> 16, myGA >> 16);
  uint4* cs = colsum + size_t(ti) * w + x0 + 4 * lane;
  uint32_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const uint4 v = make_uint4(cRB[k] & 0xFFFFu, cGA[k] & 0xFFFFu, cRB[k] >> 16, cGA[k] >> 16);
    cs[k] = v;
    t0 += v.x; t1 += v.y; t2 += v.z; t3 += v.w;
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) {
    t0 += __shfl_xor_sync(~0u, t0, o); t1 += __shfl_xor_sync(~0u, t1, o);
    t2 += __shfl_xor_sync(~0u, t2, o); t3 += __shfl_xor_sync(~0u, t3, o);
  }
  if (lane == 0) total[size_t(ti) * TW + tj] = make_uint4(t0, t1, t2, t3);
}

// Exclusive prefix in place over n elements at stride `st` (scalars), storing only every `keep`-th
// (keep 2: the 32-row boundaries of 16-row bands); batches of 32 loads.
__device__ __forceinline__ void walk(uint32_t* base, int n, size_t st, int keep) {
  uint32_t acc = 0;
  for (int t0 = 0; t0 < n; t0 += 32) {
    uint32_t v[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = (t0 + i < n) ? __ldcg(base + (t0 + i) * st) : 0u;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      if (t0 + i < n && (t0 + i) % keep == 0) base[(t0 + i) * st] = acc;
      acc += v[i];
    }
  }
}
// K2: V = exclusive vertical prefix of colsum (kept at even bands), Vs = same of totals, row carries.
__global__ void __launch_bounds__(256) q2(int w, int h, int TW, int TH1, int nv, int ns, uint32_t* colsum, uint32_t* rowsum, uint32_t* total) {
  const int b = blockIdx.x;
  if (b < nv) {
    const int e = b * 256 + threadIdx.x;
    if (e < w * 4) walk(colsum + e, TH1, size_t(w) * 4, 2);
  } else if (b < nv + ns) {
    const int e = (b - nv) * 256 + threadIdx.x;
    if (e < TW * 4) walk(total + e, TH1, size_t(TW) * 4, 2);
  } else {
    const int e = (b - nv - ns) * 256 + threadIdx.x;
    if (e < h * 4) walk(rowsum + size_t(e / 4) * TW * 4 + e % 4, TW, 4, 1);
  }
}

constexpr int kRing = 8;

// K3: warp per (32-row tile row ti, strip tj).
template <int NoLoad, int NoStore>
__global__ void __launch_bounds__(256) q3(const uint32_t* __restrict__ img, int w, int h, int TW, int TH, const uint4* __restrict__ V,
                                          const uint4* __restrict__ rowcarry, const uint4* __restrict__ vs, uint4* table) {
  __shared__ uint4 stage[8][128];
  __shared__ uint4 ring[8][kRing][32];
  const warp_strip ws(img, w, h, TW, HT);
  if (ws.ti >= TH) return;
  const int lane = ws.lane, warp = threadIdx.x >> 5, ti = ws.ti, tj = ws.tj, y0 = ws.y0, x0 = ws.x0, rows = ws.rows;
  const uint4* src = ws.src;
  const size_t stride = ws.stride;
  const uint64_t lpol = policy_evict_first();
  uint4 (*rg)[32] = ring[warp];
  if (!NoLoad) {
#pragma unroll
    for (int i = 0; i < kRing - 1; ++i) { if (i < rows) copy16_async(&rg[i][lane], src + i * stride, lpol); canopy::detail::sat::cp_async_commit(); }
  }
  uint32_t run[4][4];
  {
    const uint4* vp = V + size_t(2 * ti) * w + x0 + 4 * lane;
    uint32_t a[4] = {0, 0, 0, 0};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint4 v = __ldcg(vp + k);
      a[0] += v.x; a[1] += v.y; a[2] += v.z; a[3] += v.w;
      run[k][0] = a[0]; run[k][1] = a[1]; run[k][2] = a[2]; run[k][3] = a[3];
    }
    uint32_t cn[4] = {0, 0, 0, 0};
    for (int j0 = 0; j0 < tj; j0 += 32) {
      if (j0 + lane < tj) { const uint4 u = __ldcg(vs + size_t(2 * ti) * TW + j0 + lane); cn[0] += u.x; cn[1] += u.y; cn[2] += u.z; cn[3] += u.w; }
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) {
#pragma unroll
      for (int o = 16; o; o >>= 1) cn[c] += __shfl_xor_sync(~0u, cn[c], o);
      const uint32_t ex = warp_inclusive_sum(a[c], lane) - a[c] + cn[c];
#pragma unroll
      for (int k = 0; k < 4; ++k) run[k][c] += ex;
    }
  }
  const uint4 rcar = lane < rows ? __ldcg(rowcarry + size_t(y0 + lane) * TW + tj) : make_uint4(0, 0, 0, 0);
  uint4* stg = stage[warp];
  uint4* dst = table + size_t(y0) * w + x0;
#pragma unroll 1
  for (int r = 0; r < rows; ++r) {
    uint4 pv;
    if (NoLoad) pv = make_uint4(lane * 77 + r, lane ^ r, lane + 3 * r, lane * r);
    else {
      const int nr = r + kRing - 1;
      if (nr < rows) copy16_async(&rg[nr % kRing][lane], src + nr * stride, lpol);
      canopy::detail::sat::cp_async_commit();
      async_wait<kRing - 1>();
      pv = rg[r % kRing][lane];
    }
    uint32_t pRB[4], pGA[4], xRB, xGA;
    row_scan_rgba8(pv, lane, pRB, pGA, xRB, xGA);
    const uint32_t c0 = __shfl_sync(~0u, rcar.x, r), c1 = __shfl_sync(~0u, rcar.y, r), c2 = __shfl_sync(~0u, rcar.z, r), c3 = __shfl_sync(~0u, rcar.w, r);
    uint32_t out[16];  // 4 pixels x 4 channels
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint32_t rb = xRB + pRB[k], ga = xGA + pGA[k];
      run[k][0] += (rb & 0xFFFFu) + c0; run[k][1] += (ga & 0xFFFFu) + c1; run[k][2] += (rb >> 16) + c2; run[k][3] += (ga >> 16) + c3;
#pragma unroll
      for (int c = 0; c < 4; ++c) out[4 * k + c] = run[k][c];
    }
    canopy::detail::sat::stage_segment(stg, out, lane);
    __syncwarp();
    uint4* d = dst + size_t(r) * w;
    if (NoStore) {  // keep the values alive, store nothing
      const uint4 v = stg[lane];
      if (v.x == 0x9e3779b9u && v.y == 7u) d[lane] = v;
    } else {
      canopy::detail::sat::store_staged_row<4>(d, stg, 128, lane);
    }
    __syncwarp();
  }
  if (!NoLoad) async_wait<0>();
}
__global__ void flush_kernel(uint4* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) p[i] = make_uint4(i, 0, 0, 0);
}

// Write-only: each warp writes what K3's warp writes (Linear 0), or 64 KB contiguous (1), or the
// warps' n-th 2 KB rows side by side (2).
template <int Linear>
__global__ void __launch_bounds__(256) kw(int w, int h, int TW, int TH, uint32_t* table) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wid = blockIdx.x * 8 + warp;
  const int ti = wid / TW, tj = wid % TW;
  if (ti >= TH) return;
  const int y0 = ti * HT, x0 = tj * SW;
  const int rows = min(HT, h - y0);
  for (int r = 0; r < rows; ++r) {
    uint4* dst = Linear == 2 ? reinterpret_cast<uint4*>(table) + (size_t(r) * TH * TW + wid) * 128 : Linear ? reinterpret_cast<uint4*>(table) + (size_t(wid) * HT + r) * 128 : reinterpret_cast<uint4*>(table) + size_t(y0 + r) * w + x0;
#pragma unroll
    for (int j = 0; j < 4; ++j) dst[32 * j + lane] = make_uint4(r, lane, j, wid);
  }
}

__global__ void readsum(const uint4* p, size_t n, uint32_t* out) {
  uint32_t a = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) { const uint4 v = __ldg(p + i); a += v.x ^ v.y ^ v.z ^ v.w; }
  if (a == 0x12345678u) out[0] = a;
}
//   canopy-sat-staged [--persist-l2 MB | --small]
// --small runs the odd sizes only (for compute-sanitizer).
// --persist-l2 sets cudaLimitPersistingL2CacheSize first (device-wide; measured once, docs/sat.md).
int main(int argc, char** argv) {
  const char* program = "canopy-sat-staged";
  bool small_only = false;
  int persist_mb = -1;
  try {
    canopy_bench::command_line cl(argc, argv, program);
    while (cl.next()) {
      if (cl.is("--small")) small_only = true;
      else if (cl.is("--persist-l2")) persist_mb = cl.int_value(0, 1 << 16);
      else cl.refuse_unknown();
    }
  } catch (const canopy_bench::bad_flag& e) {
    std::printf("%s\nusage: %s [--persist-l2 MB | --small]\n", e.what(), program);
    return canopy_bench::exit_bad_command_line;
  }
  if (!cuda_device_present(program)) return 77;
  bool all_ok = true;
  if (persist_mb >= 0) {
    const size_t mb = size_t(persist_mb) << 20;
    CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, mb));
    size_t got = 0; cudaDeviceGetLimit(&got, cudaLimitPersistingL2CacheSize);
    int l2 = 0, maxp = 0; cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0); cudaDeviceGetAttribute(&maxp, cudaDevAttrMaxPersistingL2CacheSize, 0);
    std::printf("persisting L2 set-aside %zu MB (L2 %d MB, max %d MB)\n", got >> 20, l2 >> 20, maxp >> 20);
  }
  const int sizes[][2] = {{128, 1}, {256, 33}, {1024, 100}, {640, 47}, {3840, 2160}, {7680, 4320}};
  uint4* flush; const size_t nflush = size_t(200) << 20 >> 4;
  CK(cudaMalloc(&flush, nflush * 16));
  for (auto& s : sizes) {
    const int w = s[0], h = s[1];
    if (small_only && w >= 1920) continue;
    const int TW = w / SW, TH = (h + HT - 1) / HT, TH1 = (h + H1 - 1) / H1;
    const size_t npx = size_t(w) * h;
    std::vector<uint32_t> img(npx);
    std::mt19937 rng(w * 7 + h);
    for (auto& v : img) v = rng();
    uint32_t *dimg; uint4 *dtab, *dcol, *drow, *dtot, *dcopy;
    CK(cudaMalloc(&dimg, npx * 4)); CK(cudaMalloc(&dtab, npx * 16)); CK(cudaMalloc(&dcopy, npx * 16));
    CK(cudaMalloc(&dcol, size_t(TH1) * w * 16)); CK(cudaMalloc(&drow, size_t(h) * TW * 16)); CK(cudaMalloc(&dtot, size_t(TH1) * TW * 16));
    CK(cudaMemcpy(dimg, img.data(), npx * 4, cudaMemcpyHostToDevice));
    const int nb1 = (TH1 * TW + 7) / 8, nb3 = (TH * TW + 7) / 8;
    const int nv = (w * 4 + 255) / 256, ns = (TW * 4 + 255) / 256, nr = (h * 4 + 255) / 256;
    auto K1 = [&] { q1<<<nb1, 256>>>(dimg, w, h, TW, TH1, dcol, drow, dtot); };
    auto K2 = [&] { q2<<<nv + ns + nr, 256>>>(w, h, TW, TH1, nv, ns, (uint32_t*)dcol, (uint32_t*)drow, (uint32_t*)dtot); };
    auto K3 = [&] { q3<0, 0><<<nb3, 256>>>(dimg, w, h, TW, TH, dcol, drow, dtot, dtab); };
    K1(); K2(); K3();
    CK(cudaDeviceSynchronize());
    std::vector<uint32_t> got(npx * 4);
    CK(cudaMemcpy(got.data(), dtab, npx * 16, cudaMemcpyDeviceToHost));
    const std::vector<uint32_t> ref = reference_sat_rgba8(img, w, h);
    const size_t bad = count_mismatches(got, ref, w);
    std::printf("%dx%d: %s (%zu bad)\n", w, h, bad ? "WRONG" : "exact", bad);
    if (bad) all_ok = false;
    if (w >= 3840) {
      const double bytes = double(npx) * 20.0;
      const double copy = timed_us([&] { cudaMemcpyAsync(dcopy, dtab, npx * 16, cudaMemcpyDeviceToDevice); });
      const double copy_gbps = 2.0 * npx * 16 / copy * 1e-3;
      const double fill = timed_us([&] { cudaMemsetAsync(dcopy, 1, npx * 16); });
      const double all = timed_us([&] { K1(); K2(); K3(); });
      const double t1 = timed_us(K1);
      const double t12 = timed_us([&] { K1(); K2(); });
      const double t3 = timed_us(K3);
      const double t3a = timed_us([&] { K1(); K2(); K3(); }) - t12;
      const double t3n = timed_us([&] { q3<1, 0><<<nb3, 256>>>(dimg, w, h, TW, TH, dcol, drow, dtot, dtab); });
      const double t3s = timed_us([&] { q3<0, 1><<<nb3, 256>>>(dimg, w, h, TW, TH, dcol, drow, dtot, dtab); });
      const double tf = timed_us([&] { flush_kernel<<<1024, 256>>>(flush, nflush); });
      const double t3c = timed_us([&] { flush_kernel<<<1024, 256>>>(flush, nflush); K3(); }) - tf;
      const double rs = timed_us([&] { readsum<<<132 * 8, 256>>>((const uint4*)dimg, npx / 4, (uint32_t*)dcopy); });
      const double wo = timed_us([&] { kw<0><<<nb3, 256>>>(w, h, TW, TH, (uint32_t*)dcopy); });
      const double wl = timed_us([&] { kw<1><<<nb3, 256>>>(w, h, TW, TH, (uint32_t*)dcopy); });
      const double wi = timed_us([&] { kw<2><<<nb3, 256>>>(w, h, TW, TH, (uint32_t*)dcopy); });
      std::printf("  linear read of the image %.1f us (%.0f GB/s); write-only: K3's map %.1f us (%.0f GB/s), 64 KB per warp %.1f us, rows side by side %.1f us\n",
                  rs, npx * 4 / rs * 1e-3, wo, npx * 16 / wo * 1e-3, wl, wi);
      std::printf("  copy %.1f us (%.0f GB/s), fill %.1f us (%.0f GB/s) | all %.1f us = %.1f%% of copy | K1 %.1f (%.0f GB/s) K2 %.1f K3 alone %.1f, after K1+K2 %.1f, cold %.1f, no loads %.1f, no stores %.1f\n",
                  copy, copy_gbps, fill, npx * 16 / fill * 1e-3, all, 100.0 * bytes / all * 1e-3 / copy_gbps, t1, npx * 4 / t1 * 1e-3, t12 - t1, t3, t3a, t3c, t3n, t3s);
    }
    cudaFree(dimg); cudaFree(dtab); cudaFree(dcol); cudaFree(drow); cudaFree(dtot); cudaFree(dcopy);
  }
  std::printf("canopy-sat-staged: %s\n", all_ok ? "ok" : "FAILED (tables differ from the reference)");
  return all_ok ? 0 : 1;
}
