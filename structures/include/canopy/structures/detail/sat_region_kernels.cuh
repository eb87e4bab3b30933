// canopy/structures/detail/sat_region_kernels.cuh — the SAT's region kernel: RGBA8 -> u32 tables on
// sm_90 at the copy bandwidth's pace (docs/sat.md, "Sums read ahead from L2" and "The region kernel
// in the library"). structures/src/sat.cu launches it; the measuring harness
// bench/sat/sat_lookahead.cu launches its stamped form, and the other region prototypes
// (bench/sat/sat_region_walk.cuh) share its walk.
//
// The image is cut into region columns 256 px wide (Gx = width / 256) and, down the image, into
// chunks of Gy region rows: RH0 rows a region in chunk 0, RH in the others (the last chunk's rows
// spread evenly). One block an SM holds region (I, J) of every chunk, Gx x Gy blocks launched
// cooperatively (all resident at once). A block has three roles, all chunk after chunk:
//   - summers (K warps, warp k sums band k of the region's rows): load the rows straight from
//     global memory into registers and publish row sums, column sums and the total to one of
//     `exchange_slots` global slots, then `red.release` chunk c's counter;
//   - carriers (2 warps): wait until every block has published chunk c (the counter reaches
//     `target`), read what the carries need with one set of bulk copies, and make each row's carry
//     from the left (warp K) and the table row above the region (warp K + 1);
//   - walkers (K warps): scan band k's rows from an image buffer in shared memory (filled by bulk
//     copies: the second read of each row, from L2), add the carries and write the table rows
//     through TMA tensor stores that carry an L2 evict_first hint, so that the table's stores do
//     not push the image rows out of L2 before that second read.
// Carry slots (band column sums, row carries, the table row above) come in NS = 3 or 4, so the
// summers and carriers run up to NS - 1 chunks ahead of the walkers; an mbarrier a slot says when
// the walkers have left it. Eight exchange slots: a block publishes chunk c only after its walkers
// finished chunk c - NS, which needs every block's chunk c - NS published, which needs every
// block's carries of chunk c - 2 NS; so with 2 NS <= 8 slots nobody overwrites a slot still read.
// Grid barriers without clearing: each build adds B = Gx x Gy to every chunk's counter, and waits
// until it reaches target = (builds since the counters were cleared) x B.
//
// Sums of RGBA8 pixels are kept as the 16-bit pairs R|B and G|A: a 256-px row sum or a column
// sum over at most 257 rows of 8-bit values fits 16 bits. Everything else is u32, wrapping, which
// is exact modulo 2^32 (sat.hpp).
#pragma once

#include <canopy/core/config.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

#include <canopy/core/detail/bulk_copy.cuh>
#include <canopy/core/detail/named_barrier.cuh>
#include <canopy/core/detail/scan_tile_state.cuh>

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace canopy::detail::sat_region {

constexpr int RW = 256;                         //!< region width: 8 px a lane
constexpr int max_walkers = 7;                  //!< K: walkers (and summers) a block
constexpr int max_slots = 4;                    //!< NS: carry slots in shared memory, 3 or 4
constexpr int exchange_slots = 2 * max_slots;   //!< slots of the global exchange
constexpr int max_region_rows = 257;            //!< 16-bit column sums of 8-bit values
constexpr int summer_rows = 8;                  //!< rows a summer lane holds at once
constexpr int stamp_count = 11;                 //!< stamps a block and chunk (measuring builds)
constexpr int stamp_chunks = 64;                //!< chunks stamped (measuring builds)
constexpr std::size_t region_smem_limit = 227 * 1024;  //!< sm_90's opt-in dynamic shared memory a block

// ---------------------------------------------------------------------------------------------
// Warp arithmetic on RGBA sums (uint4: R, G, B, A) and on R|B, G|A pairs.

//! R, G, B, A from the 16-bit pairs R|B and G|A.
__device__ __forceinline__ uint4 rgba_of_pairs(std::uint32_t rb, std::uint32_t ga) {
  return make_uint4(rb & 0xFFFFu, ga & 0xFFFFu, rb >> 16, ga >> 16);
}
//! The same from a (R|B, G|A) pair word as the exchange keeps it.
__device__ __forceinline__ uint4 rgba_of_pairs(uint2 v) { return rgba_of_pairs(v.x, v.y); }
//! Channel-wise sum and difference of two RGBA words.
__device__ __forceinline__ uint4 add4(uint4 a, uint4 b) { return make_uint4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
__device__ __forceinline__ uint4 sub4(uint4 a, uint4 b) { return make_uint4(a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w); }
//! add4 as the operator of core's warp scans.
struct rgba_plus {
  __device__ __forceinline__ uint4 operator()(uint4 a, uint4 b) const { return add4(a, b); }
};
//! Sum of each channel of v over lanes 0..lane of the warp (core's warp_inclusive_scan).
__device__ __forceinline__ uint4 warp_inclusive_sum4(uint4 v) { return warp_inclusive_scan(v, rgba_plus{}); }
//! Sum of each channel of v over lanes 0..lane - 1 of the warp (0 in lane 0).
__device__ __forceinline__ uint4 warp_exclusive_sum4(uint4 v) { return sub4(warp_inclusive_sum4(v), v); }
//! Channel-wise sum of v over the warp's 32 lanes (every lane gets it).
__device__ __forceinline__ uint4 warp_sum4(uint4 v) {
#pragma unroll
  for (int o = 16; o; o >>= 1) v = add4(v, make_uint4(__shfl_xor_sync(~0u, v.x, o), __shfl_xor_sync(~0u, v.y, o),
                                                     __shfl_xor_sync(~0u, v.z, o), __shfl_xor_sync(~0u, v.w, o)));
  return v;
}
//! The same on float RGBA sums (the RGBA32F -> f32 region kernel, sat_region_f32_kernels.cuh).
__device__ __forceinline__ float4 add4(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
__device__ __forceinline__ float4 sub4(float4 a, float4 b) { return make_float4(a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w); }
struct float4_plus {
  __device__ __forceinline__ float4 operator()(float4 a, float4 b) const { return add4(a, b); }
};
__device__ __forceinline__ float4 warp_inclusive_sum4(float4 v) { return warp_inclusive_scan(v, float4_plus{}); }
//! Exclusive float sums are the inclusive sums of the lane before (not inclusive - v, which rounds).
__device__ __forceinline__ float4 warp_exclusive_sum4(float4 v) {
  const float4 e = shfl_up(warp_inclusive_sum4(v), 1);
  return (threadIdx.x & 31) ? e : make_float4(0.f, 0.f, 0.f, 0.f);
}
__device__ __forceinline__ float4 warp_sum4(float4 v) {
#pragma unroll
  for (int o = 16; o; o >>= 1) v = add4(v, make_float4(__shfl_xor_sync(~0u, v.x, o), __shfl_xor_sync(~0u, v.y, o),
                                                      __shfl_xor_sync(~0u, v.z, o), __shfl_xor_sync(~0u, v.w, o)));
  return v;
}
//! Inclusive sums of each of v[0..N) over lanes 0..lane of the warp, side by side (N independent
//! scans whose shuffles interleave).
template <int N>
__device__ __forceinline__ void warp_inclusive_sums(std::uint32_t (&v)[N], int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    std::uint32_t u[N];
#pragma unroll
    for (int q = 0; q < N; ++q) u[q] = __shfl_up_sync(~0u, v[q], o);
    if (lane >= o)
#pragma unroll
      for (int q = 0; q < N; ++q) v[q] += u[q];
  }
}
//! Adds R rows of RGBA8 pixels (N words a lane each, as v[row][word]) to the lane's N column sums
//! cRB / cGA and leaves each row's sum over the warp in sRB / sGA (in every lane), all as the 16-bit
//! pairs R|B and G|A; the R butterfly reductions interleave. A row of zeros adds nothing.
template <int R, int N>
__device__ __forceinline__ void sum_rows(const std::uint32_t (&v)[R][N], std::uint32_t (&cRB)[N], std::uint32_t (&cGA)[N],
                                         std::uint32_t (&sRB)[R], std::uint32_t (&sGA)[R]) {
#pragma unroll
  for (int q = 0; q < R; ++q) {
    sRB[q] = 0;
    sGA[q] = 0;
#pragma unroll
    for (int u = 0; u < N; ++u) {
      const std::uint32_t rb = v[q][u] & 0x00FF00FFu, ga = (v[q][u] >> 8) & 0x00FF00FFu;
      cRB[u] += rb;
      cGA[u] += ga;
      sRB[q] += rb;
      sGA[q] += ga;
    }
  }
#pragma unroll
  for (int o = 16; o; o >>= 1)
#pragma unroll
    for (int q = 0; q < R; ++q) {
      sRB[q] += __shfl_xor_sync(~0u, sRB[q], o);
      sGA[q] += __shfl_xor_sync(~0u, sGA[q], o);
    }
}

//! sum_rows over four rows of 256-px regions as loaded, 8 px a lane in two 16-byte units each
//! (rows[q][0], rows[q][1]: row q's pixels 8 lane .. 8 lane + 7).
__device__ __forceinline__ void sum_four_rows(const uint4 (*rows)[2], std::uint32_t (&cRB)[8], std::uint32_t (&cGA)[8],
                                              std::uint32_t (&sRB)[4], std::uint32_t (&sGA)[4]) {
  std::uint32_t words[4][8];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint4 a = rows[q][0], b = rows[q][1];
    words[q][0] = a.x, words[q][1] = a.y, words[q][2] = a.z, words[q][3] = a.w;
    words[q][4] = b.x, words[q][5] = b.y, words[q][6] = b.z, words[q][7] = b.w;
  }
  sum_rows(words, cRB, cGA, sRB, sGA);
}

// ---------------------------------------------------------------------------------------------
// sm_90 pieces beside core's bulk_copy.cuh: mbarrier forms it has no need of, the GPU-scope
// acquire and release, and the tensor stores. Empty below sm_90 (the host never launches the
// kernel there: resident_blocks_per_sm asks for PTX 9.0).

//! Adds `bytes` of bulk copies to the current phase of `m` without arriving.
__device__ __forceinline__ void mbar_expect_tx(unsigned long long* m, unsigned bytes) {
#if CANOPY_HAS_BULK_COPY
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(shared_address(m)), "r"(bytes) : "memory");
#endif
}
//! One arrival on `m` (release at CTA scope).
__device__ __forceinline__ void mbar_arrive(unsigned long long* m) {
#if CANOPY_HAS_BULK_COPY
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(m)) : "memory");
#endif
}
//! A word another block publishes, read with acquire semantics at GPU scope.
__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* a) {
  unsigned v = 0;
#if CANOPY_HAS_BULK_COPY
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
#endif
  return v;
}
//! Adds 1 to *a with release semantics at GPU scope (the writes before it are visible to an
//! acquire that sees the sum).
__device__ __forceinline__ void red_release_gpu(unsigned* a) {
#if CANOPY_HAS_BULK_COPY
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(a) : "memory");
#endif
}
//! The SM this thread runs on.
__device__ __forceinline__ unsigned smid() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
//! Orders this thread's generic-proxy accesses of shared memory before its later async-proxy ones.
__device__ __forceinline__ void fence_proxy_async() {
#if CANOPY_HAS_BULK_COPY
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
//! A 3D tensor bulk store of the box at (c0, c1, c2) from shared memory, as its own bulk group.
__device__ __forceinline__ void tensor_store(const CUtensorMap* tm, const void* src, int c0, int c1, int c2) {
#if CANOPY_HAS_BULK_COPY
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(tm),
               "r"(shared_address(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}
//! The same with an L2 cache policy.
__device__ __forceinline__ void tensor_store(const CUtensorMap* tm, const void* src, int c0, int c1, int c2,
                                             std::uint64_t pol) {
#if CANOPY_HAS_BULK_COPY
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group.L2::cache_hint [%0, {%2, %3, %4}], [%1], %5;" ::"l"(
                   tm),
               "r"(shared_address(src)), "r"(c0), "r"(c1), "r"(c2), "l"(pol)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}
//! A 3D tensor bulk load of the box at (c0, c1, c2) into shared memory, completing on `m`, with an
//! L2 cache policy.
__device__ __forceinline__ void tensor_load(const CUtensorMap* tm, void* dst, int c0, int c1, int c2, unsigned long long* m,
                                            std::uint64_t pol) {
#if CANOPY_HAS_BULK_COPY
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3, %4}], [%5], %6;" ::"r"(
          shared_address(dst)),
      "l"(tm), "r"(c0), "r"(c1), "r"(c2), "r"(shared_address(m)), "l"(pol)
      : "memory");
#endif
}
//! Waits until at most n (0, 1 or 2) bulk groups of this thread still read shared memory.
__device__ __forceinline__ void bulk_wait_read(int n) {
#if CANOPY_HAS_BULK_COPY
  if (n <= 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  else if (n == 1) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
  else asm volatile("cp.async.bulk.wait_group.read 2;" ::: "memory");
#endif
}
//! Waits until this thread's bulk groups are complete (their writes done).
__device__ __forceinline__ void bulk_wait_all() {
#if CANOPY_HAS_BULK_COPY
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}

// ---------------------------------------------------------------------------------------------
// Region geometry.

//! Chunk c's rows a region and the chunk's first image row (NC chunks, RH0 rows a region in chunk
//! 0, RH in later ones, RHL in the last; Gy regions down a chunk).
template <class Params>
__host__ __device__ inline void chunk_geometry(const Params& p, int c, int& start, int& rh) {
  rh = c == p.NC - 1 ? p.RHL : c ? p.RH : p.RH0;
  start = c ? p.Gy * (p.RH0 + (c - 1) * p.RH) : 0;
}
//! Region row I's rows of chunk c: rh rows a region, the first at image row `top`, n of them in the
//! image (fewer at the bottom, 0 past it).
template <class Params>
__host__ __device__ inline void region_rows(const Params& p, int c, int I, int& rh, int& top, int& n) {
  int start;
  chunk_geometry(p, c, start, rh);
  top = start + I * rh;
  n = std::max(0, std::min(rh, p.H - top));
}
//! Band k's rows [r0, r1) of a region with rh rows this chunk, n of them in the image.
__host__ __device__ inline void band_rows(int k, int K, int rh, int n, int& r0, int& r1) {
  r0 = k * rh / K;
  r1 = std::min((k + 1) * rh / K, n);
}
//! Chunks of a height-H image whose first chunk has R0 rows and the others R; the first row of the
//! last chunk goes to `last_start`.
inline int chunks_of(int H, int R0, int R, int& last_start) {
  const int n = H <= R0 ? 1 : 1 + (H - R0 + R - 1) / R;
  last_start = n == 1 ? 0 : R0 + (n - 2) * R;
  return n;
}
//! Cuts p's H rows into chunks of p.Gy regions: RH0 rows a region in chunk 0, RH in later ones;
//! sets p.NC, p.RH0, p.RH, p.RHL (the last chunk's rows, spread evenly), p.RHmax and p.RHs (RHmax
//! rounded up to even, the row sums' stride). False where a region would have more than
//! max_region_rows rows.
template <class Params>
inline bool plan_chunks(Params& p, int RH0, int RH) {
  p.RH0 = RH0;
  p.RH = RH;
  int last_start;
  p.NC = chunks_of(p.H, p.Gy * RH0, p.Gy * RH, last_start);
  p.RHL = (p.H - last_start + p.Gy - 1) / p.Gy;
  p.RHmax = std::max({RH0, RH, p.RHL});
  p.RHs = (p.RHmax + 1) & ~1;
  return p.RHmax <= max_region_rows;
}
//! Where lane l keeps its pixel i (of 8 consecutive ones, 16 bytes each) in a shared 256-px row:
//! 16-byte unit i ^ (l & 7) of the lane's 128 bytes, so 8 lanes' units fall in different banks. It
//! is the tensor map's 128-byte swizzle on a 1024-byte aligned row.
__host__ __device__ inline int swz8(int lane, int i) { return 8 * lane + (i ^ (lane & 7)); }
//! Where a band's column sums keep lane l's 16-byte piece h (pixels 8 l + 2 h, + 1), as uint4
//! units of the band's row: conflict-free for the lanes' writes and reads.
__host__ __device__ inline int bandcol_unit(int lane, int h) { return 4 * lane + (h ^ ((lane >> 1) & 3)); }
//! Lane `lane`'s 8 pixels (words) of row r of an image buffer.
__device__ __forceinline__ void row_words(const std::uint32_t* buf, int r, int lane, std::uint32_t (&v)[8]) {
  const uint4* row = reinterpret_cast<const uint4*>(buf + std::size_t(r) * RW) + 2 * lane;
  const uint4 a = row[0], b = row[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

// ---------------------------------------------------------------------------------------------
// Carries and the walk.

//! One warp: rl[r] for the region's n rows = rows 0..r of the image left of the region.
//! row_left(r) is row r's sum over the regions to the left. V: uint4 or float4.
template <class V, class RowLeft>
__device__ __forceinline__ void row_carries(int n, int lane, V* rl, RowLeft row_left) {
  V carry{};
  for (int r0 = 0; r0 < n; r0 += 32) {
    const int r = r0 + lane;
    V s{};
    if (r < n) s = row_left(r);
    s = add4(warp_inclusive_sum4(s), carry);
    if (r < n) rl[r] = s;
    carry = shfl_idx(s, 31);
  }
}
//! One warp: the table row above region (I, J) of a chunk of Gy region rows, into ti (PX px a lane,
//! lane l's pixel i at ti[place(l, i)]). coltop holds the region column's sums above the chunk and
//! leftabove the sum above the chunk left of the region; both move on to the next chunk here.
//! total(i, j) is region (i, j)'s total (j < J); columns(i, q) gives region (i, J)'s column sums of
//! the lane's PX pixels. V: uint4 or float4.
template <int PX, class V, class Place, class Total, class Columns>
__device__ __forceinline__ void table_row_above_of(int Gy, int I, int J, int lane, V (&coltop)[PX], V& leftabove, V* ti,
                                                   Place place, Total total, Columns columns) {
  V a{}, all{};
  for (int idx = lane; idx < Gy * J; idx += 32) {
    const int i = idx / J, j = idx % J;
    const V t = total(i, j);
    all = add4(all, t);
    if (i < I) a = add4(a, t);
  }
  a = warp_sum4(a);
  all = warp_sum4(all);
  V ab[PX];
#pragma unroll
  for (int i = 0; i < PX; ++i) ab[i] = coltop[i];
  for (int ii = 0; ii < Gy; ++ii) {
    V q[PX];
    columns(ii, q);
#pragma unroll
    for (int i = 0; i < PX; ++i) {
      if (ii < I) ab[i] = add4(ab[i], q[i]);
      coltop[i] = add4(coltop[i], q[i]);
    }
  }
#pragma unroll
  for (int i = 1; i < PX; ++i) ab[i] = add4(ab[i], ab[i - 1]);
  const V off = add4(add4(leftabove, a), warp_exclusive_sum4(ab[PX - 1]));
#pragma unroll
  for (int i = 0; i < PX; ++i) ti[place(lane, i)] = add4(ab[i], off);
  leftabove = add4(leftabove, all);
}
//! table_row_above_of for the RGBA8 kernel's 8 px a lane at swz8.
template <class Total, class Columns>
__device__ __forceinline__ void table_row_above(int Gy, int I, int J, int lane, uint4 (&coltop)[8], uint4& leftabove,
                                                uint4* ti, Total total, Columns columns) {
  table_row_above_of<8>(Gy, I, J, lane, coltop, leftabove, ti, [](int l, int i) { return swz8(l, i); }, total, columns);
}

//! One walker warp's band of a chunk: rows [r0, r1) of the region in `buf`, written to the table
//! through the warp's D staging rows. The table row above the band is Tinit (`tinit`, swizzled)
//! plus the column sums of the bands before it (`bandcol`, [k][RW] uint2 R|B, G|A pairs at
//! bandcol_unit); row r's carry from the left is rl[r].
struct band_walk {
  const std::uint32_t* buf;
  const uint2* bandcol;
  const uint4* tinit;
  const uint4* rl;
  uint4* stage;                  // this warp's D staging rows (1024-byte aligned, 4 KB each)
  int D;
  int store;                     // 0: staging read back into st.global; 1: tensor bulk store
  bool write;                    // false: everything but the table stores (measuring builds)
  bool hint;                     // tensor stores with `pol`
  std::uint64_t pol;
  const CUtensorMap* tmap;
  uint4* tab;
  int W, x0, top;

  //! Walks band k; `sidx` is the warp's next staging row (kept across chunks).
  __device__ __forceinline__ void run(int k, int r0, int r1, int lane, int& sidx) const {
    // The band's first row above it: Tinit + the region's columns above the band, prefixed over x.
    uint4 S[8];
    {
      std::uint32_t aRB[8] = {}, aGA[8] = {};
      for (int kk = 0; kk < k; ++kk) {
        const uint4* bc = reinterpret_cast<const uint4*>(bandcol + std::size_t(kk) * RW);
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          const uint4 t = bc[bandcol_unit(lane, h)];
          aRB[2 * h] += t.x;
          aGA[2 * h] += t.y;
          aRB[2 * h + 1] += t.z;
          aGA[2 * h + 1] += t.w;
        }
      }
      S[0] = rgba_of_pairs(aRB[0], aGA[0]);
#pragma unroll
      for (int i = 1; i < 8; ++i) S[i] = add4(S[i - 1], rgba_of_pairs(aRB[i], aGA[i]));
      const uint4 ex = warp_exclusive_sum4(S[7]);
#pragma unroll
      for (int i = 0; i < 8; ++i) S[i] = add4(add4(S[i], ex), tinit[swz8(lane, i)]);
    }
    // Row r's in-lane prefixes (R|B and G|A pairs; a 256-px row sum fits 16 bits).
    auto lane_prefix = [&](int r, std::uint32_t(&rb)[8], std::uint32_t(&ga)[8]) {
      std::uint32_t v[8];
      row_words(buf, r, lane, v);
      rb[0] = v[0] & 0x00FF00FFu;
      ga[0] = (v[0] >> 8) & 0x00FF00FFu;
#pragma unroll
      for (int i = 1; i < 8; ++i) {
        rb[i] = rb[i - 1] + (v[i] & 0x00FF00FFu);
        ga[i] = ga[i - 1] + ((v[i] >> 8) & 0x00FF00FFu);
      }
    };
    // Row r's table row (rb, ga: its prefixes from the region's left edge) to the staging row and out.
    auto emit = [&](int r, const std::uint32_t(&rb)[8], const std::uint32_t(&ga)[8]) {
      const uint4 carry = rl[r];
      uint4* st = stage + std::size_t(sidx) * RW;
      if (store == 1) {
        if (lane == 0) bulk_wait_read(D - 1);
        __syncwarp();
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        S[i] = add4(S[i], rgba_of_pairs(rb[i], ga[i]));
        st[swz8(lane, i)] = add4(S[i], carry);
      }
      if (write) {
        if (store == 1) {
          fence_proxy_async();
          __syncwarp();
          if (lane == 0) {
            if (hint) tensor_store(tmap, st, 0, x0 / 8, top + r, pol);
            else tensor_store(tmap, st, 0, x0 / 8, top + r);
          }
        } else {
          __syncwarp();
          uint4* trow = tab + std::size_t(top + r) * W + x0;
#pragma unroll
          for (int kk = 0; kk < 8; ++kk) {
            const int q = lane + 32 * kk;  // pixel q is lane q / 8's pixel q % 8
            trow[q] = st[swz8(q >> 3, q & 7)];
          }
          __syncwarp();
        }
      } else {
        __syncwarp();
      }
      if (++sidx == D) sidx = 0;
    };
    // Turns in-lane prefixes into prefixes from the region's left edge: adds the lanes before
    // (e: their inclusive sums, as warp_inclusive_sums leaves them).
    auto from_left = [&](std::uint32_t(&rb)[8], std::uint32_t(&ga)[8], std::uint32_t eRB, std::uint32_t eGA) {
      eRB -= rb[7];
      eGA -= ga[7];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        rb[i] += eRB;
        ga[i] += eGA;
      }
    };
    int r = r0;
    for (; r + 1 < r1; r += 2) {  // two rows at a time: their warp scans interleave
      std::uint32_t rbA[8], gaA[8], rbB[8], gaB[8];
      lane_prefix(r, rbA, gaA);
      lane_prefix(r + 1, rbB, gaB);
      std::uint32_t e[4] = {rbA[7], gaA[7], rbB[7], gaB[7]};
      warp_inclusive_sums(e, lane);
      from_left(rbA, gaA, e[0], e[1]);
      from_left(rbB, gaB, e[2], e[3]);
      emit(r, rbA, gaA);
      emit(r + 1, rbB, gaB);
    }
    if (r < r1) {
      std::uint32_t rb[8], ga[8];
      lane_prefix(r, rb, ga);
      std::uint32_t e[2] = {rb[7], ga[7]};
      warp_inclusive_sums(e, lane);
      from_left(rb, ga, e[0], e[1]);
      emit(r, rb, ga);
    }
  }
};

//! A walker warp done with chunk c (rh rows a region) requests chunk c + 2's rows into the image
//! buffer chunk c used: its own band, where chunk c + 2 has the same region height (the same rows
//! of the buffer: nobody else reads them); where the bands move (after chunk 0, before the last),
//! the last of the K walkers done with the buffer (counted in *done) requests every band.
//! load_band(c, k) requests band k of chunk c.
template <class Params, class LoadBand>
__device__ __forceinline__ void refill_buffer(const Params& p, int c, int rh, int k, int K, int lane, unsigned* done,
                                              LoadBand load_band) {
  if (c + 2 < p.NC) {
    int s2, rh2;
    chunk_geometry(p, c + 2, s2, rh2);
    if (rh2 == rh) {
      load_band(c + 2, k);
    } else {
      unsigned last = 0;
      if (lane == 0) {
        __threadfence_block();
        last = atomicAdd(done, 1u) % unsigned(K) == unsigned(K - 1);
        __threadfence_block();
      }
      if (__shfl_sync(~0u, last, 0))
        for (int kk = 0; kk < K; ++kk) load_band(c + 2, kk);
    }
  }
}

//! Thread 0 of a region kernel's block: the mbarriers and counters both kernels share. Per image
//! buffer and walker, a load barrier (one arrival, the copies' bytes) and a count of walkers done
//! with the buffer; per carry slot, `ready` (every summer and carrier lane, after its writes) and
//! `freed` (every walker warp, after its reads); `xbar` for the exchange's copies.
__device__ __forceinline__ void init_region_barriers(int K, unsigned long long* loadbar, unsigned* done,
                                                     unsigned long long* ready, unsigned long long* freed,
                                                     unsigned long long* xbar) {
  for (int b = 0; b < 2; ++b) {
    for (int k = 0; k < max_walkers; ++k) mbarrier_init_only(&loadbar[b * max_walkers + k], 1);
    done[b] = 0;
  }
  for (int s = 0; s < max_slots; ++s) {
    mbarrier_init_only(&ready[s], unsigned(K + 2) * 32);
    mbarrier_init_only(&freed[s], unsigned(K));
  }
  mbarrier_init_only(xbar, 1);
  mbarrier_init_visible();
}

//! The row carrier's lane 0, once every block has published the chunk in exchange slot `slotbase`:
//! one set of bulk copies, on xbar, of what region (I, J)'s carries read: the row sums of the
//! regions to its left (to xrow), its region column's column sums (to xcol, region_px a region)
//! and every total (to xtot). The sums' size is that of p's exchange (RGBA8: R|B, G|A pairs;
//! RGBA32F: float4).
template <class Params>
__device__ __forceinline__ void request_exchange(const Params& p, std::size_t slotbase, int I, int J, int region_px,
                                                 unsigned char* xrow, unsigned char* xcol, unsigned char* xtot,
                                                 unsigned long long* xbar) {
  constexpr std::size_t sum = sizeof(*p.rowsum), tot = sizeof(*p.total);
  asm volatile("fence.proxy.async;" ::: "memory");  // acquired words, then the async proxy
  const std::size_t rowbytes = std::size_t(J) * p.RHs * sum, colbytes = std::size_t(region_px) * sum;
  mbar_expect_tx(xbar, unsigned(rowbytes + std::size_t(p.Gy) * colbytes + std::size_t(p.Gy) * p.Gx * tot));
  if (rowbytes)
    bulk_copy_to_shared<false>(xrow, p.rowsum + (slotbase + std::size_t(I) * p.Gx) * p.RHs, unsigned(rowbytes), xbar, 0);
  for (int i = 0; i < p.Gy; ++i)
    bulk_copy_to_shared<false>(xcol + std::size_t(i) * colbytes, p.colsum + (slotbase + std::size_t(i) * p.Gx + J) * region_px,
                               unsigned(colbytes), xbar, 0);
  bulk_copy_to_shared<false>(xtot, p.total + slotbase, unsigned(std::size_t(p.Gy) * p.Gx * tot), xbar, 0);
  mbar_arrive(xbar);
}

// ---------------------------------------------------------------------------------------------
// The kernel.

//! What every kernel over region chunks takes: the image (RGBA8 pixels as words) and table, the
//! region grid and chunk count, the exchange and the build's barrier target, and for measuring
//! builds a mode and stamps.
struct region_params {
  const std::uint32_t* img;
  uint4* tab;
  int W, H, Gx, Gy, NC;
  uint2* rowsum;               //!< region row sums (exchange slots x Gy x Gx x RHs)
  uint2* colsum;               //!< region column sums (exchange slots x Gy x Gx x RW)
  uint4* total;                //!< region totals (exchange slots x Gy x Gx)
  unsigned* cnt;               //!< grid barrier of each chunk
  unsigned target;             //!< builds since the counters were cleared x blocks: what releases this build's barriers
  int mode;                    //!< measuring builds: 0 exact, 2 no table stores, 3 set-up only
  unsigned long long* stamps;  //!< measuring builds: stamp_index layout, or null
};

//! The region kernel's parameters: region_params, the walkers a block and their staging rows, the
//! carry slots and the chunk plan (plan_chunks).
struct lookahead_params : region_params {
  int K, D, NS;
  int RH0, RH, RHL, RHmax, RHs;
};

//! Where measuring builds keep stamp s of block b and chunk c.
__host__ __device__ inline std::size_t stamp_index(int b, int s, int c, int nstamp, int max_chunks) {
  return (std::size_t(b) * nstamp + s) * max_chunks + c;
}

//! Shared-memory layout of the region kernel (byte offsets from a 1024-byte aligned base).
struct lookahead_layout {
  std::size_t stage, img, bandcol, tinit, rl, xrow, xcol, xtot, wtot, mbar, bytes;
  __host__ __device__ lookahead_layout(int RHmax, int RHs, int K, int D, int Gx, int Gy, int NS) {
    std::size_t o = 0;
    stage = o;  // [K][D][RW] uint4, 4 KB rows (1024-byte aligned for the 128-byte swizzle)
    o += std::size_t(K) * D * RW * 16;
    img = o;  // [2][RHmax][RW] words
    o += 2 * std::size_t(RHmax) * RW * 4;
    bandcol = o;  // [NS][K][RW] uint2: each band's column sums (bandcol_unit)
    o += std::size_t(NS) * K * RW * 8;
    tinit = o;  // [NS][RW] uint4: the table row above the region (swz8)
    o += std::size_t(NS) * RW * 16;
    rl = o;  // [NS][RHmax] uint4: each row's carry
    o += std::size_t(NS) * RHmax * 16;
    // The exchange's bulk copies: row sums of the regions left of this one [Gx - 1][RHs] uint2,
    // column sums of its region column [Gy][RW] uint2, every total [Gy][Gx] uint4.
    xrow = o;
    o += std::size_t(Gx - 1) * RHs * 8;
    xcol = o;
    o += std::size_t(Gy) * RW * 8;
    xtot = o;
    o += std::size_t(Gy) * Gx * 16;
    wtot = o;  // [K] uint4: band totals
    o += std::size_t(K) * 16;
    mbar = o;  // load[2][max_walkers], ready[max_slots], freed[max_slots], exchange; then done[2] (u32 counters)
    o += std::size_t(2 * max_walkers + 2 * max_slots + 1) * 8 + 8;
    bytes = o;
  }
  //! Dynamic shared memory a launch asks for: the layout and the slack to align its base.
  __host__ __device__ std::size_t launch_bytes() const { return bytes + 1024; }
};

//! The region kernel: (2 K + 2) warps a block, Gx x Gy blocks launched cooperatively, dynamic
//! shared memory lookahead_layout::launch_bytes(). `tmap` is the table as encode_table_map makes it.
//! Measured builds honour p.mode and p.stamps (bench/sat/sat_lookahead.cu); the library's ignore
//! them.
template <bool Measured>
__global__ void __launch_bounds__(16 * 32, 1)
    sat_region_kernel(const __grid_constant__ CUtensorMap tmap, lookahead_params p) {
#if CANOPY_HAS_BULK_COPY
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (shared_address(smem_raw) & 1023u)) & 1023u);
  const int K = p.K;
  const int NS = p.NS;
  const lookahead_layout L(p.RHmax, p.RHs, K, p.D, p.Gx, p.Gy, NS);
  std::uint32_t* img_s = reinterpret_cast<std::uint32_t*>(smem + L.img);
  uint4* stage = reinterpret_cast<uint4*>(smem + L.stage);
  uint2* bandcol = reinterpret_cast<uint2*>(smem + L.bandcol);
  uint4* tinit = reinterpret_cast<uint4*>(smem + L.tinit);
  uint4* rl_s = reinterpret_cast<uint4*>(smem + L.rl);
  uint4* wtot = reinterpret_cast<uint4*>(smem + L.wtot);
  unsigned long long* loadbar = reinterpret_cast<unsigned long long*>(smem + L.mbar);  // [2][max_walkers]
  unsigned long long* ready = loadbar + 2 * max_walkers;                              // [max_slots]
  unsigned long long* freed = ready + max_slots;                                      // [max_slots]
  unsigned long long* xbar = freed + max_slots;                                       // the exchange's copies
  unsigned* done = reinterpret_cast<unsigned*>(xbar + 1);  // [2]: walkers done with a buffer
  const uint2* xrow = reinterpret_cast<const uint2*>(smem + L.xrow);
  const uint2* xcol = reinterpret_cast<const uint2*>(smem + L.xcol);
  const uint4* xtot = reinterpret_cast<const uint4*>(smem + L.xtot);
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int blk = blockIdx.x, I = blk / p.Gx, J = blk % p.Gx, x0 = J * RW;
  // Stamps (measuring builds): 0 summers start (summer 0), 1 published, 2 released (carrier 0 saw
  // the counter), 3 walk start, 4 walk end (walker 0), 5 SM id (chunk 0 only), 6 walker 0's buffer
  // loaded, 7 summed, 8 the exchange's reads arrived, 9 carries ready.
  auto stamp = [&](int s, int c) {
    if (Measured && p.stamps && c < stamp_chunks)
      p.stamps[stamp_index(blk, s, c, stamp_count, stamp_chunks)] = global_timer_ns();
  };
  if (threadIdx.x == 0) {
    init_region_barriers(K, loadbar, done, ready, freed, xbar);
    if (Measured && p.stamps) p.stamps[stamp_index(blk, 5, 0, stamp_count, stamp_chunks)] = smid();
  }
  __syncthreads();
  if (Measured && p.mode == 3) return;

  // Band k of region row I in chunk c: its rows [r0, r1), the region's first at image row `top`.
  auto band_of = [&](int c, int k, int& top, int& r0, int& r1) {
    int rh, n;
    region_rows(p, c, I, rh, top, n);
    band_rows(k, K, rh, n, r0, r1);
  };
  // Bulk copies of band k's rows of chunk c into buffer c & 1, on loadbar[c & 1][k], a row a lane
  // of the calling warp. Each walker requests its band of chunks 0 and 1 at the start, and of chunk
  // c + 2 once it is done with chunk c; where the bands move between the chunks (after chunk 0,
  // before the last), the last walker done with chunk c requests every band.
  auto load_band = [&](int c, int k) {
    const int b = c & 1;
    int top, r0, r1;
    band_of(c, k, top, r0, r1);
    unsigned long long* m = &loadbar[b * max_walkers + k];
    std::uint32_t* buf = img_s + std::size_t(b) * p.RHmax * RW;
    const std::uint64_t pol = l2_evict_first_policy();  // the summers have read the rows already (most often)
    if (lane == 0) mbar_expect_tx(m, unsigned(std::max(0, r1 - r0)) * RW * 4);
    __syncwarp();
    for (int r = r0 + lane; r < r1; r += 32) {
      fence_proxy_async();  // the walkers' reads of the buffer, then the copies' writes
      bulk_copy_to_shared<true>(buf + std::size_t(r) * RW, p.img + std::size_t(top + r) * p.W + x0, RW * 4, m, pol);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(m);
  };

  if (w < K) {
    // ---------------------------------------------------------------- summers (warp k: band k)
    const int k = w;
    uint4 v[summer_rows][2];  // up to summer_rows rows of the band, 8 px a lane
    for (int c = 0; c < p.NC; ++c) {
      const int s = c % NS, xs = c % exchange_slots;
      int top, r0, r1;
      band_of(c, k, top, r0, r1);
      if (c >= NS) mbarrier_wait(&freed[s], unsigned((c - NS) / NS) & 1u);  // the walkers left slot s (chunk c - NS)
      if (k == 0 && lane == 0) stamp(0, c);
      const std::size_t base = (std::size_t(xs) * p.Gy + I) * p.Gx + J;
      std::uint32_t bRB[8] = {}, bGA[8] = {};  // the band's column sums
      uint4 tot = make_uint4(0, 0, 0, 0);
      for (int rb = r0; rb < r1; rb += summer_rows) {
#pragma unroll
        for (int q = 0; q < summer_rows; ++q) {
          if (rb + q < r1) {
            const uint4* row = reinterpret_cast<const uint4*>(p.img + std::size_t(top + rb + q) * p.W + x0) + 2 * lane;
            v[q][0] = __ldg(row);
            v[q][1] = __ldg(row + 1);
          } else {
            v[q][0] = v[q][1] = make_uint4(0, 0, 0, 0);
          }
        }
#pragma unroll
        for (int g = 0; g < summer_rows; g += 4) {  // four rows at a time: four independent reductions
          std::uint32_t sRB[4], sGA[4];
          sum_four_rows(v + g, bRB, bGA, sRB, sGA);
#pragma unroll
          for (int q = 0; q < 4; ++q)
            if (rb + g + q < r1) {
              if (lane == 0) p.rowsum[base * p.RHs + rb + g + q] = make_uint2(sRB[q], sGA[q]);
              tot = add4(tot, rgba_of_pairs(sRB[q], sGA[q]));
            }
        }
      }
      uint4* bc = reinterpret_cast<uint4*>(bandcol + (std::size_t(s) * K + k) * RW);
#pragma unroll
      for (int h = 0; h < 4; ++h)
        bc[bandcol_unit(lane, h)] = make_uint4(bRB[2 * h], bGA[2 * h], bRB[2 * h + 1], bGA[2 * h + 1]);
      if (lane == 0) wtot[k] = tot;
      named_barrier(1, K * 32);
      if (threadIdx.x == 0) stamp(7, c);
      const uint2* bcs = bandcol + std::size_t(s) * K * RW;
      for (int x = threadIdx.x; x < RW; x += K * 32) {  // the region's column sums: its bands' sums
        const int at = 2 * bandcol_unit(x >> 3, (x & 7) >> 1) + (x & 1);
        std::uint32_t a = 0, bb = 0;
        for (int kk = 0; kk < K; ++kk) {
          const uint2 t = bcs[std::size_t(kk) * RW + at];
          a += t.x;
          bb += t.y;
        }
        p.colsum[base * RW + x] = make_uint2(a, bb);
      }
      if (threadIdx.x == 0) {
        uint4 t = make_uint4(0, 0, 0, 0);
        for (int kk = 0; kk < K; ++kk) t = add4(t, wtot[kk]);
        p.total[base] = t;
      }
      named_barrier(1, K * 32);
      if (threadIdx.x == 0) {
        red_release_gpu(&p.cnt[c]);
        stamp(1, c);
      }
      mbar_arrive(&ready[s]);
    }
  } else if (w < K + 2) {
    // ---------------------------------------------------------------- carriers
    const bool rows = w == K;                  // warp K: row carries; warp K + 1: Tinit
    uint4 coltop[8];                           // (Tinit warp) columns above the chunk
    uint4 leftabove = make_uint4(0, 0, 0, 0);  // (Tinit warp) above the chunk, left of the region
    for (int i = 0; i < 8; ++i) coltop[i] = make_uint4(0, 0, 0, 0);
    for (int c = 0; c < p.NC; ++c) {
      const int s = c % NS, xs = c % exchange_slots;
      int rh, top, n;
      region_rows(p, c, I, rh, top, n);
      const std::size_t slotbase = std::size_t(xs) * p.Gy * p.Gx;
      if (rows && lane == 0) {
        while (ld_acquire_gpu(&p.cnt[c]) < p.target) {
        }
        stamp(2, c);
        request_exchange(p, slotbase, I, J, RW, smem + L.xrow, smem + L.xcol, smem + L.xtot, xbar);
      }
      mbarrier_wait(xbar, unsigned(c) & 1u);
      if (rows && lane == 0) stamp(8, c);
      if (c >= NS) mbarrier_wait(&freed[s], unsigned((c - NS) / NS) & 1u);
      if (rows) {  // Rl[r]: rows 0..r of the region, left of it
        row_carries(n, lane, rl_s + std::size_t(s) * p.RHmax, [&](int r) {
          uint4 sum = make_uint4(0, 0, 0, 0);
          for (int j = 0; j < J; ++j) sum = add4(sum, rgba_of_pairs(xrow[j * p.RHs + r]));
          return sum;
        });
      } else {  // Tinit[x]: the table row above the region
        table_row_above(
            p.Gy, I, J, lane, coltop, leftabove, tinit + std::size_t(s) * RW, [&](int i, int j) { return xtot[i * p.Gx + j]; },
            [&](int ii, uint4(&q)[8]) {
              const uint4* cs = reinterpret_cast<const uint4*>(xcol + std::size_t(ii) * RW + 8 * lane);
              uint4 tt[4];
#pragma unroll
              for (int h = 0; h < 4; ++h) tt[h] = cs[h];
#pragma unroll
              for (int h = 0; h < 4; ++h) {
                q[2 * h] = rgba_of_pairs(tt[h].x, tt[h].y);
                q[2 * h + 1] = rgba_of_pairs(tt[h].z, tt[h].w);
              }
            });
      }
      named_barrier(2, 64);  // both carriers are done with the exchange's bytes
      if (rows && lane == 0) stamp(9, c);
      mbar_arrive(&ready[s]);
    }
  } else {
    // ---------------------------------------------------------------- walkers
    const int k = w - K - 2;
    const std::uint64_t spol = l2_evict_first_policy();
    uint4* my_stage = stage + std::size_t(k) * p.D * RW;
    int sidx = 0;
    for (int c = 0; c < std::min(2, p.NC); ++c) load_band(c, k);
    for (int c = 0; c < p.NC; ++c) {
      const int b = c & 1, s = c % NS;
      int rh, top, n, r0, r1;
      region_rows(p, c, I, rh, top, n);
      band_rows(k, K, rh, n, r0, r1);
      mbarrier_wait(&loadbar[b * max_walkers + k], unsigned(c >> 1) & 1u);
      if (k == 0 && lane == 0) stamp(6, c);
      mbarrier_wait(&ready[s], unsigned(c / NS) & 1u);
      if (k == 0 && lane == 0) stamp(3, c);
      if (r0 < r1) {
        const band_walk walk{img_s + std::size_t(b) * p.RHmax * RW,
                             bandcol + std::size_t(s) * K * RW,
                             tinit + std::size_t(s) * RW,
                             rl_s + std::size_t(s) * p.RHmax,
                             my_stage,
                             p.D,
                             1,
                             !Measured || p.mode != 2,
                             true,
                             spol,
                             &tmap,
                             p.tab,
                             p.W,
                             x0,
                             top};
        walk.run(k, r0, r1, lane, sidx);
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(&freed[s]);  // slot s may take chunk c + NS
      refill_buffer(p, c, rh, k, K, lane, &done[b], load_band);
      if (k == 0 && lane == 0) stamp(4, c);
    }
    if (lane == 0) bulk_wait_all();
  }
#else
  (void)tmap;
  (void)p;
#endif
}

// ---------------------------------------------------------------------------------------------
// Host side.

//! Byte offsets of the region kernel's global exchange (one buffer) for B blocks, NC chunks and
//! RHs row-sum stride. The chunk counters come first, at offset 0 whatever the grid and region
//! height, so that counters a kept buffer holds from one build stay where the next build looks
//! for them (the slots are padded to 256 bytes after them).
//! `sum_bytes` is the size of one row or column sum: 8 for RGBA8's R|B, G|A pairs, 16 for float4;
//! `region_px` the region width.
struct exchange_layout {
  std::size_t cnt, rowsum, colsum, total, bytes;
  exchange_layout(int B, int NC, int RHs, int sum_bytes = 8, int region_px = RW) {
    std::size_t o = 0;
    cnt = o;
    o += (std::size_t(NC) * 4 + 255) & ~std::size_t(255);
    rowsum = o;
    o += std::size_t(exchange_slots) * B * RHs * sum_bytes;
    colsum = o;
    o += std::size_t(exchange_slots) * B * region_px * sum_bytes;
    total = o;
    o += std::size_t(exchange_slots) * B * 16;
    bytes = o;
  }
};

//! cuTensorMapEncodeTiled, through the runtime's driver entry point (no -lcuda); null where the
//! driver has none.
using encode_tiled_fn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                     const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                     CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
inline encode_tiled_fn tensor_map_encoder() {
  static const encode_tiled_fn f = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
#if CUDART_VERSION >= 12050
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
#else
    const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &q);
#endif
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      fn = nullptr;
    }
    return reinterpret_cast<encode_tiled_fn>(fn);
  }();
  return f;
}
//! The W x H table `tab` of 16-byte pixels (u32 or f32 RGBA) as a 3D tensor of u32: 32 words (8 px)
//! x W / 8 x H; a box is one region row (region_px px: 256 for RGBA8, 32 rows of 128 bytes in shared
//! memory, one a lane; 128 for RGBA32F, 16 rows), 16-byte units swizzled within 1024 bytes (swz8,
//! swz4). False where the driver cannot encode it.
inline bool encode_table_map(void* tab, int W, int H, CUtensorMap& tm, int region_px = RW) {
  const encode_tiled_fn encode = tensor_map_encoder();
  if (!encode) return false;
  const cuuint64_t dims[3] = {32, cuuint64_t(W / 8), cuuint64_t(H)};
  const cuuint64_t strides[2] = {128, cuuint64_t(W) * 16};
  const cuuint32_t box[3] = {32, cuuint32_t(region_px / 8), 1}, estr[3] = {1, 1, 1};
  return encode(&tm, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, tab, dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace canopy::detail::sat_region

#endif
