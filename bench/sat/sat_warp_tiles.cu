// canopy-sat-warp-tiles: a measuring prototype (not the library's kernel; CUDA builds only, not run
// by CTest) of a single-pass SAT for RGBA8 -> u32 in which every WARP is a tile: 32 rows x 128 px
// (16 KB of image, 64 KB of table), loaded into the warp's own shared memory with cp.async, then
//   - the tile's row sums (lane = row) and column sums (lane = 4 columns) are published as tagged
//     64-bit descriptor words {value, epoch x 4 + status}, the same protocol as the library's
//     look_back_protocol::tagged (docs/sat.md, "Tagged descriptor words"), a new epoch per build;
//   - the warp looks back to the left (row carries), up (column carries: in-strip prefixes of the
//     column sums) and up the tile column (corner: the totals of the row carries), as the library's
//     kernel does with 3 warps of a block;
//   - it walks the 32 rows, storing each 2 KB table row through a 2 KB swizzled stage (512
//     contiguous bytes per store instruction).
// No block-wide barrier anywhere: 12 warps per SM (3 blocks of 4, bound by shared memory) each
// claim tiles in anti-diagonal order (canopy::detail::sat::diagonal_tile) from one counter, so a
// warp waits only on tiles claimed before it, by running warps (no deadlock at any occupancy).
// The question it answers: is the library's ceiling the block (8 warps bound by barriers, 2 tiles in
// flight per SM) rather than the look-back? Variants (template parameters): look-back windows,
// the column look-back first, 16-row tiles, stores without the stage, fewer warps per SM. (Both
// look-backs in one loop, with each kind of inclusive word published after the loop or as soon as
// a lane had it, were measured at cd5e13b and dropped: docs/sat.md.) The descriptor words, the
// look-backs and the store stage are the library's (sat_kernels.cuh).
// Every table is checked exactly against a CPU reference (odd heights, 1080p, 4K, 8K; widths are
// multiples of 128, the only case this prototype handles), timed (canopy_bench::median_ms_on_stream:
// 25 held-stream CUDA-event runs after 3 warm-ups, counter memset included) against a
// device-to-device copy of a table-sized buffer, and one extra build of each size sums clock64 per
// phase: where a warp's tile time goes. Results: docs/sat.md, "Other decompositions (session 11)".
// Exits 1 if any table is wrong. --small
// runs the odd sizes only (for compute-sanitizer).
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <random>
#include <algorithm>
#include <cmath>
#include <string>

#include <canopy/structures/detail/sat_functors.cuh>
#include <canopy/structures/detail/sat_kernels.cuh>

#include "common/bench_common.hpp"

#include "sat_proto_common.cuh"

using namespace sat_proto;
#define CK SAT_PROTO_CHECK

namespace ks = canopy::detail::sat;
using ks::tagged_word;

struct params {
  const uint32_t* img; int w, h; uint4* table;
  tagged_word *roww, *colw, *cornw;  // [tile][4][32], [tile][4][128], [tile][4]
  unsigned* counter; unsigned epoch; int TW, TH;
  unsigned long long* stamps;  // [0] load, [1] aggregates, [2] row lb, [3] col lb, [4] corner, [5] output, [6] tiles
};

constexpr int kWarps = 4;
template <int TR> struct warp_smem_t { uint4 img[TR][32]; uint4 stage[128]; uint4 cum[32]; };
using warp_smem = warp_smem_t<32>;


// RW, CW: predecessors read per round by the row and column look-backs.
template <int RW, int CW, bool Direct, bool ColumnsFirst, int TR = 32>
__global__ void __launch_bounds__(kWarps * 32) satw(params q) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  warp_smem_t<TR>& S = reinterpret_cast<warp_smem_t<TR>*>(smem_raw)[threadIdx.x >> 5];
  const int lane = threadIdx.x & 31;
  const unsigned tiles = unsigned(q.TW) * unsigned(q.TH);
  const uint64_t pol = policy_evict_first();
  const size_t stride = size_t(q.w) / 4;  // uint4 per image row
  for (;;) {
    unsigned t = 0;
    if (lane == 0) t = atomicAdd(q.counter, 1u);
    t = __shfl_sync(~0u, t, 0);
    if (t >= tiles) return;
    const ks::tile_position p = ks::diagonal_tile(t, q.TW, q.TH);
    const int ti = p.ti, tj = p.tj, y0 = ti * TR, x0 = tj * 128;
    const int rows = min(TR, q.h - y0);
    const unsigned tile = unsigned(ti) * q.TW + tj;
    long long tk = clock64();
    const uint4* src = reinterpret_cast<const uint4*>(q.img + size_t(y0) * q.w + x0) + lane;
    for (int r = 0; r < rows; ++r) copy16_async(&S.img[r][lane], src + r * stride, pol);
    canopy::detail::sat::cp_async_commit();
    async_wait<0>();
    __syncwarp();
    if (q.stamps && lane == 0) atomicAdd(q.stamps + 0, clock64() - tk), atomicAdd(q.stamps + 6, 1ull), tk = clock64();
    // column sums (own 4 px, packed pairs) and row sums (lane r sums row r, rotated reads)
    uint32_t cRB[4] = {0, 0, 0, 0}, cGA[4] = {0, 0, 0, 0};
    for (int r = 0; r < rows; ++r) {
      const uint4 v = S.img[r][lane];
      const uint32_t w4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int k = 0; k < 4; ++k) { cRB[k] += w4[k] & 0x00FF00FFu; cGA[k] += (w4[k] >> 8) & 0x00FF00FFu; }
    }
    uint32_t rs[4] = {0, 0, 0, 0};
    if (lane < rows) {
      uint32_t sRB = 0, sGA = 0;
#pragma unroll 8
      for (int j = 0; j < 32; ++j) {
        const uint4 v = S.img[lane][(j + lane) & 31];
        const uint32_t w4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) { sRB += w4[k] & 0x00FF00FFu; sGA += (w4[k] >> 8) & 0x00FF00FFu; }
      }
      rs[0] = sRB & 0xFFFFu; rs[1] = sGA & 0xFFFFu; rs[2] = sRB >> 16; rs[3] = sGA >> 16;
    }
    // column aggregate = in-strip inclusive prefix of the column sums
    uint32_t cagg[4][4];  // [px][c]
    {
      uint32_t a[4] = {0, 0, 0, 0};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        a[0] += cRB[k] & 0xFFFFu; a[1] += cGA[k] & 0xFFFFu; a[2] += cRB[k] >> 16; a[3] += cGA[k] >> 16;
#pragma unroll
        for (int c = 0; c < 4; ++c) cagg[k][c] = a[c];
      }
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        uint32_t x = a[c];
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) { const uint32_t y = __shfl_up_sync(~0u, x, o); if (lane >= o) x += y; }
        const uint32_t ex = x - a[c];
#pragma unroll
        for (int k = 0; k < 4; ++k) cagg[k][c] += ex;
      }
    }
    const bool right = tj + 1 < q.TW, below = ti + 1 < q.TH;
    tagged_word* rw = q.roww + size_t(tile) * 128;
    tagged_word* cw = q.colw + size_t(tile) * 512;
    tagged_word* kw = q.cornw + size_t(tile) * 4;
    if (right)
      for (int c = 0; c < 4; ++c) ks::store_tagged(rw + c * 32 + lane, q.epoch, tj == 0 ? ks::flag_inclusive : ks::flag_aggregate, rs[c]);
    if (below)
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int k = 0; k < 4; ++k)
          ks::store_tagged(cw + c * 128 + 4 * lane + k, q.epoch, ti == 0 ? ks::flag_inclusive : ks::flag_aggregate, cagg[k][c]);
    if (q.stamps && lane == 0) atomicAdd(q.stamps + 1, clock64() - tk), tk = clock64();
    // Column look-back (16 elements a lane: 4 columns x 4 channels), then the column inclusive.
    uint32_t ccar[16];
    auto column_look_back = [&] {
#pragma unroll
      for (int e = 0; e < 16; ++e) ccar[e] = 0;
      if (ti == 0) return;
      ks::lane_look_back_tagged<CW, 16>(
          ti, q.epoch, [&](int k, int e) { return q.colw + (size_t(ti - 1 - k) * q.TW + tj) * 512 + (e & 3) * 128 + 4 * lane + (e >> 2); },
          ccar);
      if (below)
#pragma unroll
        for (int c = 0; c < 4; ++c)
#pragma unroll
          for (int k = 0; k < 4; ++k) ks::store_tagged(cw + c * 128 + 4 * lane + k, q.epoch, ks::flag_inclusive, cagg[k][c] + ccar[k * 4 + c]);
    };
    if (ColumnsFirst) column_look_back();
    // Row look-back: lane = row, 4 channels.
    uint32_t L[4] = {0, 0, 0, 0};
    if (tj > 0) {
      ks::lane_look_back_tagged<RW, 4>(
          tj, q.epoch, [&](int k, int c) { return q.roww + (size_t(ti) * q.TW + tj - 1 - k) * 128 + c * 32 + lane; }, L);
      if (right)
        for (int c = 0; c < 4; ++c) ks::store_tagged(rw + c * 32 + lane, q.epoch, ks::flag_inclusive, L[c] + rs[c]);
    }
    if (q.stamps && lane == 0) atomicAdd(q.stamps + 2, clock64() - tk), tk = clock64();
    // corner aggregate = total of the row carries; cumulative row carries for the output
    uint32_t cum[4];
    uint32_t ctot[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      uint32_t x = L[c];
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) { const uint32_t y = __shfl_up_sync(~0u, x, o); if (lane >= o) x += y; }
      cum[c] = x;
      ctot[c] = __shfl_sync(~0u, x, 31);
    }
    S.cum[lane] = make_uint4(cum[0], cum[1], cum[2], cum[3]);
    if (!ColumnsFirst) column_look_back();
    if (q.stamps && lane == 0) atomicAdd(q.stamps + 3, clock64() - tk), tk = clock64();
    // Corner: aggregate = the total of the row carries, looked back up the tile column (the first
    // row's and column's tiles are inclusive at once: corner 0, or no rectangle to the left).
    uint32_t corner[4] = {0, 0, 0, 0};
    const bool corner_look_back = ti > 0 && tj > 0;
    if (below && lane == 0)
      for (int c = 0; c < 4; ++c)
        ks::store_tagged(kw + c, q.epoch, corner_look_back ? ks::flag_aggregate : ks::flag_inclusive, ctot[c]);
    if (corner_look_back) {
      ks::warp_look_back_tagged<true, 4>(ti, q.epoch, [&](int k) { return q.cornw + (size_t(ti - 1 - k) * q.TW + tj) * 4; }, corner);
      if (below && lane == 0)
        for (int c = 0; c < 4; ++c) ks::store_tagged(kw + c, q.epoch, ks::flag_inclusive, corner[c] + ctot[c]);
    }
    __syncwarp();
    if (q.stamps && lane == 0) atomicAdd(q.stamps + 4, clock64() - tk), tk = clock64();
    // output rows
    uint32_t run[4][4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int c = 0; c < 4; ++c) run[k][c] = corner[c] + ccar[k * 4 + c];
    uint4* dst = q.table + size_t(y0) * q.w + x0;
    for (int r = 0; r < rows; ++r) {
      const uint4 pv = S.img[r][lane];
      uint32_t pRB[4], pGA[4], xRB, xGA;
      row_scan_rgba8(pv, lane, pRB, pGA, xRB, xGA);
      const uint4 cr = S.cum[r];
      uint4* d = dst + size_t(r) * q.w;
      uint32_t out[16];  // 4 pixels x 4 channels
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const uint32_t rb = xRB + pRB[k], ga = xGA + pGA[k];
        run[k][0] += rb & 0xFFFFu; run[k][1] += ga & 0xFFFFu; run[k][2] += rb >> 16; run[k][3] += ga >> 16;
        out[4 * k + 0] = run[k][0] + cr.x; out[4 * k + 1] = run[k][1] + cr.y;
        out[4 * k + 2] = run[k][2] + cr.z; out[4 * k + 3] = run[k][3] + cr.w;
        if (Direct) store_policy(d + 4 * lane + k, make_uint4(out[4 * k], out[4 * k + 1], out[4 * k + 2], out[4 * k + 3]), pol);
      }
      if (!Direct) {
        ks::stage_segment(S.stage, out, lane);
        __syncwarp();
        ks::store_staged_row<4>(d, S.stage, 128, lane);
        __syncwarp();
      }
    }
    if (q.stamps && lane == 0) atomicAdd(q.stamps + 5, clock64() - tk), tk = clock64();
  }
}

bool all_ok = true;
bool small_only = false;  // --small: the odd sizes only (for compute-sanitizer)

template <class K>
void run_variant(const char* name, K kern, int TR = 32, int max_blocks_per_sm = 0) {
  const size_t smem = kWarps * (TR == 32 ? sizeof(warp_smem_t<32>) : sizeof(warp_smem_t<16>));
  const int sizes[][2] = {{128, 1}, {128, 100}, {256, 33}, {1024, 100}, {640, 47}, {1920, 1080}, {3840, 2160}, {7680, 4320}};
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, kWarps * 32, smem));
  int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaFuncAttributes fa; cudaFuncGetAttributes(&fa, kern);
  if (max_blocks_per_sm > 0) per_sm = std::min(per_sm, max_blocks_per_sm);  // fewer tiles in flight
  std::printf("%s: %d regs, blocks per SM %d (%d warps)\n", name, fa.numRegs, per_sm, per_sm * kWarps);
  unsigned long long* stamps; CK(cudaMalloc(&stamps, 64));
  for (auto& s : sizes) {
    const int w = s[0], h = s[1];
    if (small_only && w >= 1920) continue;
    params q{};
    q.w = w; q.h = h; q.TW = w / 128; q.TH = (h + TR - 1) / TR;
    const size_t tiles = size_t(q.TW) * q.TH, npx = size_t(w) * h;
    std::vector<uint32_t> img(npx);
    std::mt19937 rng(w * 7 + h);
    for (auto& v : img) v = rng();
    uint32_t* dimg; CK(cudaMalloc(&dimg, npx * 4)); CK(cudaMemcpy(dimg, img.data(), npx * 4, cudaMemcpyHostToDevice));
    q.img = dimg;
    CK(cudaMalloc(&q.table, npx * 16));
    CK(cudaMalloc(&q.roww, tiles * 128 * 8)); CK(cudaMalloc(&q.colw, tiles * 512 * 8)); CK(cudaMalloc(&q.cornw, tiles * 4 * 8));
    CK(cudaMemset(q.roww, 0, tiles * 128 * 8)); CK(cudaMemset(q.colw, 0, tiles * 512 * 8)); CK(cudaMemset(q.cornw, 0, tiles * 4 * 8));
    CK(cudaMalloc(&q.counter, 4));
    const int grid = int(std::min<size_t>(size_t(per_sm) * sms, (tiles + kWarps - 1) / kWarps));
    unsigned epoch = 0;
    auto build = [&] {
      q.epoch = ++epoch;
      cudaMemsetAsync(q.counter, 0, 4);
      kern<<<grid, kWarps * 32, smem>>>(q);
    };
    build();
    CK(cudaDeviceSynchronize());
    std::vector<uint32_t> got(npx * 4);
    CK(cudaMemcpy(got.data(), q.table, npx * 16, cudaMemcpyDeviceToHost));
    const std::vector<uint32_t> ref = reference_sat_rgba8(img, w, h);
    const size_t bad = count_mismatches(got, ref, w);
    std::printf("  %5dx%-5d: %s (%zu bad)", w, h, bad ? "WRONG" : "exact", bad);
    if (bad) all_ok = false;
    if (w >= 1920) {
      void* cp; CK(cudaMalloc(&cp, npx * 16));
      const double copy = timed_us([&] { cudaMemcpyAsync(cp, q.table, npx * 16, cudaMemcpyDeviceToDevice); });
      const double copy_gbps = 2.0 * npx * 16 / copy * 1e-3;
      const double t = timed_us(build);
      CK(cudaMemcpy(got.data(), q.table, npx * 16, cudaMemcpyDeviceToHost));
      const size_t bad2 = count_mismatches(got, ref, w);
      if (bad2) all_ok = false;
      std::printf(" | %.1f us = %.1f%% of copy (%.0f GB/s), grid %d, recheck %s", t, 100.0 * npx * 20 / t * 1e-3 / copy_gbps, copy_gbps, grid, bad2 ? "WRONG" : "exact");
      // one measured build: mean cycles per tile and phase
      CK(cudaMemset(stamps, 0, 64));
      q.stamps = stamps; build(); CK(cudaDeviceSynchronize()); q.stamps = nullptr;
      unsigned long long st[8]; CK(cudaMemcpy(st, stamps, 64, cudaMemcpyDeviceToHost));
      const double n = double(st[6]);
      std::printf("\n      kcycles per tile: load %.2f aggregates %.2f row look-back %.2f column look-back %.2f corner %.2f output %.2f (tiles %.0f)", st[0] / n / 1e3, st[1] / n / 1e3, st[2] / n / 1e3,
                  st[3] / n / 1e3, st[4] / n / 1e3, st[5] / n / 1e3, n);
      cudaFree(cp);
    }
    std::printf("\n");
    cudaFree(dimg); cudaFree(q.table); cudaFree(q.roww); cudaFree(q.colw); cudaFree(q.cornw); cudaFree(q.counter);
  }
  cudaFree(stamps);
}

//   canopy-sat-warp-tiles [--small]
int main(int argc, char** argv) {
  small_only = argc > 1 && std::string(argv[1]) == "--small";
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
    std::printf("canopy-sat-warp-tiles: no CUDA device\n");
    return 77;
  }
  // <RW, CW, Direct, ColumnsFirst, TR>: look-back windows (predecessors read per round) for rows
  // and columns, stores without the stage, the column look-back before the row one, tile rows.
  run_variant("rows then columns, windows 1 (reference)", satw<1, 1, false, false>);
  run_variant("rows then columns, windows 4 (rows) and 2 (columns)", satw<4, 2, false, false>);
  run_variant("columns then rows", satw<1, 1, false, true>);
  run_variant("stores without the stage (4 x 16 bytes a lane)", satw<4, 2, true, false>);
  run_variant("16-row tiles (16 warps per SM)", satw<1, 1, false, false, 16>, 16);
  // Fewer warps in flight: shallower look-back chains, less latency hidden.
  run_variant("reference with 2 blocks per SM (8 warps)", satw<1, 1, false, false>, 32, 2);
  run_variant("reference with 1 block per SM (4 warps)", satw<1, 1, false, false>, 32, 1);
  std::printf("canopy-sat-warp-tiles: %s\n", all_ok ? "ok" : "FAILED (tables differ from the reference)");
  return all_ok ? 0 : 1;
}
