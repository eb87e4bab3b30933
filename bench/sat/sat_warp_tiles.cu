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
// row and column look-backs in one loop or column first, 16-row tiles, stores without the stage.
// Every table is checked exactly against a CPU reference (odd heights, 1080p, 4K, 8K; widths are
// multiples of 128, the only case this prototype handles), timed (median of 25 CUDA-event runs
// after 3 warm-ups, counter memset included) against a device-to-device copy of a table-sized
// buffer, and one extra build of each size sums clock64 per phase: where a warp's tile time goes.
// Results: docs/sat.md, "Warp tiles (session 11)". Exits 1 if any table is wrong. --small
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

#include "sat_proto_common.cuh"

using namespace sat_proto;
#define CK SAT_PROTO_CHECK

__device__ __forceinline__ void put(unsigned long long* p, uint32_t v, uint32_t tag) {
  const unsigned long long w = (unsigned long long)tag << 32 | v;
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(w) : "memory");
}
__device__ __forceinline__ unsigned long long get(const unsigned long long* p) {
  unsigned long long w; asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"(p) : "memory"); return w;
}

struct params {
  const uint32_t* img; int w, h; uint4* table;
  unsigned long long *roww, *colw, *cornw;  // [tile][4][32], [tile][4][128], [tile][4]
  unsigned* counter; unsigned epoch; int TW, TH;
  unsigned long long* stamps;  // [0] load, [1] aggregates, [2] row lb, [3] col lb, [4] corner, [5] output, [6] tiles
};

constexpr int kWarps = 4;
template <int TR> struct warp_smem_t { uint4 img[TR][32]; uint4 stage[128]; uint4 cum[32]; };
using warp_smem = warp_smem_t<32>;


// Looks back over `n` words per lane (one scan element each); pred(j) gives predecessor j's word
// pointer for element e; sums values up to each element's nearest inclusive word.
template <int N, int W, class Ptr, class First, class Round>
__device__ __forceinline__ void look_back_f(First first, unsigned epoch, Ptr ptr, uint32_t (&sum)[N], Round round);

template <int N, int W, class Ptr, class First>
__device__ __forceinline__ void look_back_f(First first, unsigned epoch, Ptr ptr, uint32_t (&sum)[N]) {
  look_back_f<N, W>(first, epoch, ptr, sum, [](unsigned, const uint32_t (&)[N]) {});
}

//! The same, calling round(pending, sum) after every round of reads (a lane may publish the
//! elements it has finished while it still waits for others).
template <int N, int W, class Ptr, class First, class Round>
__device__ __forceinline__ void look_back_f(First first, unsigned epoch, Ptr ptr, uint32_t (&sum)[N], Round round) {
  int cur[N];
  unsigned pending = 0;
#pragma unroll
  for (int e = 0; e < N; ++e) { sum[e] = 0; cur[e] = first(e); if (cur[e] >= 0) pending |= 1u << e; }
  while (pending) {
    unsigned long long wd[N][W];
#pragma unroll
    for (int e = 0; e < N; ++e)
#pragma unroll
      for (int i = 0; i < W; ++i) wd[e][i] = ((pending >> e & 1) && cur[e] - i >= 0) ? get(ptr(cur[e] - i, e)) : 0ull;
#pragma unroll
    for (int e = 0; e < N; ++e) {
      if (!(pending >> e & 1)) continue;
#pragma unroll
      for (int i = 0; i < W; ++i) {
        if (cur[e] < 0 || !(pending >> e & 1)) break;
        const uint32_t tag = uint32_t(wd[e][i] >> 32);
        if ((tag >> 2) != epoch || (tag & 3) == 0) break;  // not yet published: read again from here
        sum[e] += uint32_t(wd[e][i]);
        if ((tag & 3) == 2) pending &= ~(1u << e);
        --cur[e];
      }
      if (cur[e] < 0) pending &= ~(1u << e);
    }
    round(pending, sum);
  }
}

template <int N, int W, class Ptr>
__device__ __forceinline__ void look_back(int first, unsigned epoch, Ptr ptr, uint32_t (&sum)[N]) {
  look_back_f<N, W>([&](int) { return first; }, epoch, ptr, sum);
}

template <int RW, int CW, int Direct, int Unroll, int Comb, int TR = 32>
__global__ void __launch_bounds__(kWarps * 32) satw(params q) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  warp_smem_t<TR>& S = reinterpret_cast<warp_smem_t<TR>*>(smem_raw)[threadIdx.x >> 5];
  const int lane = threadIdx.x & 31;
  const unsigned tiles = unsigned(q.TW) * unsigned(q.TH);
  const uint64_t pol = policy_evict_first();
  const unsigned AGG = q.epoch << 2 | 1u, INC = q.epoch << 2 | 2u;
  const size_t stride = size_t(q.w) / 4;  // uint4 per image row
  for (;;) {
    unsigned t = 0;
    if (lane == 0) t = atomicAdd(q.counter, 1u);
    t = __shfl_sync(~0u, t, 0);
    if (t >= tiles) return;
    const canopy::detail::sat::tile_position p = canopy::detail::sat::diagonal_tile(t, q.TW, q.TH);
    const int ti = p.ti, tj = p.tj, y0 = ti * TR, x0 = tj * 128;
    const int rows = min(TR, q.h - y0);
    const unsigned tile = unsigned(ti) * q.TW + tj;
    long long tk = clock64();
    const uint4* src = reinterpret_cast<const uint4*>(q.img + size_t(y0) * q.w + x0) + lane;
    for (int r = 0; r < rows; ++r) copy16_async(&S.img[r][lane], src + r * stride, pol);
    async_commit();
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
        const uint4 v = S.img[lane < TR ? lane : 0][(j + lane) & 31];
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
    unsigned long long* rw = q.roww + size_t(tile) * 128;
    unsigned long long* cw = q.colw + size_t(tile) * 512;
    unsigned long long* kw = q.cornw + size_t(tile) * 4;
    if (right) {
      if (tj == 0) { for (int c = 0; c < 4; ++c) put(rw + c * 32 + lane, rs[c], INC); }
      else for (int c = 0; c < 4; ++c) put(rw + c * 32 + lane, rs[c], AGG);
    }
    if (below) {
      const unsigned tg = ti == 0 ? INC : AGG;
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int k = 0; k < 4; ++k) put(cw + c * 128 + 4 * lane + k, cagg[k][c], tg);
    }
    if (q.stamps && lane == 0) atomicAdd(q.stamps + 1, clock64() - tk), tk = clock64();
    // row look-back: lane = row, 4 channels (and, when Comb, the column look-back in the same loop)
    uint32_t L[4] = {0, 0, 0, 0};
    uint32_t ccar[16];
    // Column look-back (16 elements a lane: 4 columns x 4 channels), then the column inclusive.
    auto column_look_back = [&] {
      if (ti > 0) {
        look_back<16, CW>(ti - 1, q.epoch, [&](int i, int e) { return q.colw + (size_t(i) * q.TW + tj) * 512 + (e & 3) * 128 + 4 * lane + (e >> 2); }, ccar);
        if (below)
#pragma unroll
          for (int c = 0; c < 4; ++c)
#pragma unroll
            for (int k = 0; k < 4; ++k) put(cw + c * 128 + 4 * lane + k, cagg[k][c] + ccar[k * 4 + c], INC);
      } else {
#pragma unroll
        for (int e = 0; e < 16; ++e) ccar[e] = 0;
      }
    };
    if (Comb == 1 || Comb == 3) {
      // Comb 3: each lane publishes its row inclusive words, and its column inclusive words, as
      // soon as its own elements of that kind are done (Comb 1: after the whole loop).
      uint32_t both[20];
      bool row_out = !(right && tj > 0), col_out = !(below && ti > 0);
      auto publish = [&](unsigned pending, const uint32_t (&sum)[20]) {
        if (!row_out && !(pending & 0xFu)) {
          for (int c = 0; c < 4; ++c) put(rw + c * 32 + lane, sum[c] + rs[c], INC);
          row_out = true;
        }
        if (!col_out && !(pending >> 4)) {
#pragma unroll
          for (int c = 0; c < 4; ++c)
#pragma unroll
            for (int k = 0; k < 4; ++k) put(cw + c * 128 + 4 * lane + k, cagg[k][c] + sum[4 + k * 4 + c], INC);
          col_out = true;
        }
      };
      auto first = [&](int e) { return e < 4 ? tj - 1 : ti - 1; };
      auto word = [&](int j, int e) {
        return e < 4 ? q.roww + (size_t(ti) * q.TW + j) * 128 + e * 32 + lane
                     : q.colw + (size_t(j) * q.TW + tj) * 512 + ((e - 4) & 3) * 128 + 4 * lane + ((e - 4) >> 2);
      };
      if (Comb == 3) look_back_f<20, 1>(first, q.epoch, word, both, publish);
      else look_back_f<20, 1>(first, q.epoch, word, both);
      publish(0u, both);  // whatever is left (Comb 1: everything; Comb 3: groups with no predecessor)
#pragma unroll
      for (int c = 0; c < 4; ++c) L[c] = both[c];
#pragma unroll
      for (int e = 0; e < 16; ++e) ccar[e] = both[4 + e];
    } else {
      if (Comb == 2) column_look_back();
      if (tj > 0) {
        look_back<4, RW>(tj - 1, q.epoch, [&](int j, int c) { return q.roww + (size_t(ti) * q.TW + j) * 128 + c * 32 + lane; }, L);
        if (right) for (int c = 0; c < 4; ++c) put(rw + c * 32 + lane, L[c] + rs[c], INC);
      }
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
    // column look-back: 16 elements per lane
    if (!Comb) column_look_back();
    if (q.stamps && lane == 0) atomicAdd(q.stamps + 3, clock64() - tk), tk = clock64();
    // corner: lanes 0..3 = channels
    uint32_t corner[4] = {0, 0, 0, 0};
    {
      uint32_t mine = 0;
      const uint32_t myagg = lane < 4 ? ctot[lane] : 0u;
      if (ti > 0 && tj > 0 && lane < 4) {
        if (below) put(kw + lane, myagg, AGG);
        uint32_t s1[1];
        look_back<1, 4>(ti - 1, q.epoch, [&](int i, int) { return q.cornw + (size_t(i) * q.TW + tj) * 4 + lane; }, s1);
        mine = s1[0];
        if (below) put(kw + lane, mine + myagg, INC);
      } else if (lane < 4 && below) {
        put(kw + lane, myagg, INC);  // ti == 0: corner 0; tj == 0: aggregate 0
      }
#pragma unroll
      for (int c = 0; c < 4; ++c) corner[c] = __shfl_sync(~0u, mine, c);
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
#pragma unroll Unroll
    for (int r = 0; r < rows; ++r) {
      const uint4 pv = S.img[r][lane];
      uint32_t pRB[4], pGA[4], xRB, xGA;
      row_scan_rgba8(pv, lane, pRB, pGA, xRB, xGA);
      const uint4 cr = S.cum[r];
      uint4* d = dst + size_t(r) * q.w;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const uint32_t rb = xRB + pRB[k], ga = xGA + pGA[k];
        run[k][0] += rb & 0xFFFFu; run[k][1] += ga & 0xFFFFu; run[k][2] += rb >> 16; run[k][3] += ga >> 16;
        const uint4 o = make_uint4(run[k][0] + cr.x, run[k][1] + cr.y, run[k][2] + cr.z, run[k][3] + cr.w);
        if (Direct) store_policy(d + 4 * lane + k, o, pol);
        else S.stage[stage_slot(lane, k)] = o;
      }
      if (!Direct) {
        __syncwarp();
#pragma unroll
        for (int j = 0; j < 4; ++j) { const int px = 32 * j + lane; store_policy(d + px, S.stage[stage_slot(px >> 2, px & 3)], pol); }
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
      const double copy = median_us([&] { cudaMemcpyAsync(cp, q.table, npx * 16, cudaMemcpyDeviceToDevice); });
      const double copy_gbps = 2.0 * npx * 16 / copy * 1e-3;
      const double t = median_us(build);
      CK(cudaMemcpy(got.data(), q.table, npx * 16, cudaMemcpyDeviceToHost));
      size_t bad2 = 0;
      for (size_t i = 0; i < npx * 4; ++i) bad2 += got[i] != ref[i];
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
  // <RW, CW, Direct, Unroll, Order, TR>: look-back windows (predecessors read per round) for rows
  // and columns, stores without the stage, output rows unrolled, Order 0 rows then columns / 1 both
  // in one loop / 2 columns then rows / 3 one loop publishing each kind when done (phase sums of
  // 1-3 land under "row look-back").
  run_variant("rows then columns, windows 1 (reference)", satw<1, 1, 0, 1, 0>);
  run_variant("rows then columns, windows 4 (rows) and 2 (columns)", satw<4, 2, 0, 1, 0>);
  run_variant("rows and columns in one loop", satw<1, 1, 0, 1, 1>);
  run_variant("one loop, each lane publishing a kind as soon as it is done", satw<1, 1, 0, 1, 3>);
  run_variant("columns then rows", satw<1, 1, 0, 1, 2>);
  run_variant("stores without the stage (4 x 16 bytes a lane)", satw<4, 2, 1, 1, 0>);
  run_variant("16-row tiles (16 warps per SM)", satw<1, 1, 0, 1, 0, 16>, 16);
  // Fewer warps in flight: shallower look-back chains, less latency hidden.
  run_variant("reference with 2 blocks per SM (8 warps)", satw<1, 1, 0, 1, 0>, 32, 2);
  run_variant("reference with 1 block per SM (4 warps)", satw<1, 1, 0, 1, 0>, 32, 1);
  std::printf("canopy-sat-warp-tiles: %s\n", all_ok ? "ok" : "FAILED (tables differ from the reference)");
  return all_ok ? 0 : 1;
}
