// canopy-sat-phased: a prototype (CUDA builds only, sm_90, not run by CTest) of an RGBA8 -> u32
// summed-area table for images that fit in L2 (docs/sat.md, "The whole image first, then the table",
// session 23). The region kernels overlap the reads of one chunk with the table stores of another,
// and pay a fill, a grid barrier a chunk and the SMs' uneven store rates at every chunk. Here the
// whole image is read first, and only then is the table written, from tiles claimed one at a time:
//   A  every warp sums tiles of 256 px x 32 rows, read from DRAM with an L2 evict_last hint: row
//      sums R and column sums C (16-bit pairs R|B, G|A) and the total T. The last tile of a group
//      of 8 tile rows to finish (a counter a group) sums the group: column sums CS, total GTT.
//   -- one grid barrier --
//   B  blocks claim tiles from a counter (two ahead). For a tile, warp w loads its 4 rows again
//      (from L2, evict_first) and sums a 32-px slice of the column sums above the tile (CS of the
//      groups above, C of the tile rows above it in its group); warp 0 sums each row's sums left of
//      the region (R), warp 1 the corner (GTT and T). Then every warp makes the table row above its
//      first row, scans its rows and writes them through TMA tensor stores (evict_first).
//      Pipelined by one tile: the loads of tile k + 1 are in flight while tile k is walked.
// Configurations D: staging rows a warp (1-3).
// Modes: exact (checked against a CPU reference), nostore (no table stores), A (A and the barrier),
// empty (launch only). A stamped build reports each phase's end over the blocks.
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sat_region_walk.cuh"

using namespace sat_proto;
using namespace sat_proto::region_walk;
#define CK SAT_PROTO_CHECK

namespace phased {

constexpr int TH = 32;        // rows a tile
constexpr int GT = 8;         // tile rows a group: GT x TH <= 257, so a group's column sums fit 16 bits
constexpr int NW = 8;         // warps a block
constexpr int RPW = TH / NW;  // rows a warp walks in B
constexpr int nstamps = 4;    // 0 start, 1 A done, 2 barrier passed, 3 B done

struct params {
  const std::uint32_t* img;
  uint4* tab;
  int W, H, ntx, nty, ng;
  uint2* R;         // [ntx][H] row y's sum over region j (R|B, G|A)
  uint2* C;         // [nty][W] column x's sum over tile row i (R|B, G|A)
  uint4* T;         // [nty][ntx] tile totals
  uint2* CS;        // [ng][W] column x's sum over group g's tile rows (R|B, G|A)
  uint4* GTT;       // [ng][ntx] group totals of region j
  unsigned* gcnt;   // [ng][ntx] tiles of a group summed, counting on across builds
  unsigned* bar;    // grid barrier, never cleared: each build adds the block count
  unsigned* claim;  // B's tile counter, never cleared: each build adds tiles + 2 x blocks
  unsigned target;  // builds x blocks
  unsigned claim_base;
  int D, mode;                 // mode: 0 exact, 1 no stores, 2 A and the barrier only, 3 launch only
  unsigned long long* stamps;  // [blocks][nstamps] or null
};

constexpr int max_pieces = 16;  // B: groups above a tile plus tile rows above it in its group
constexpr int max_left = 16;    // B: regions left of a tile

//! Shared memory of a block (byte offsets from a 1024-byte aligned base). B's per-tile values come
//! in two buffers: the tile being walked and the next one, whose loads are in flight meanwhile.
struct layout {
  std::size_t stage, tot, colw, rc, rcp, corner, ring, bytes;
  __host__ __device__ explicit layout(int D) {
    std::size_t o = 0;
    stage = o;  // [NW][D][RW] uint4 staging rows
    o += std::size_t(NW) * D * RW * 16;
    tot = o;  // [2][RW] uint4: the column sums above the tile (swz8)
    o += 2 * RW * 16;
    colw = o;  // [2][NW][RW] uint2: each warp's rows' column sums (R|B, G|A; swz8)
    o += 2 * std::size_t(NW) * RW * 8;
    rc = o;  // [2][TH] uint4: each row's sum left of the region
    o += 2 * TH * 16;
    rcp = o;  // [2][TH] uint4: rc summed down the tile up to this row
    o += 2 * TH * 16;
    corner = o;  // [2] uint4: above the tile, left of the region
    o += 2 * 16;
    ring = o;  // [4] int: claimed tiles
    o += 16;
    bytes = o + 1024;
  }
};

__device__ __forceinline__ void grid_barrier(unsigned* ctr, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    red_release_gpu(ctr);
    while (int(ld_acquire_gpu(ctr) - target) < 0) {
    }
  }
  __syncthreads();
}

//! The lane's 8 px (two 16-byte units) of image row y from pixel x0 with L2 policy `pol`, or zeros
//! for a row past the image.
__device__ __forceinline__ void load_px8(const params& p, int y, int x0, bool inside, std::uint64_t pol, int lane, uint4 (&d)[2]) {
  if (inside) {
    const uint4* row = reinterpret_cast<const uint4*>(p.img + std::size_t(y) * p.W + x0) + 2 * lane;
    d[0] = load_policy(row, pol);
    d[1] = load_policy(row + 1, pol);
  } else {
    d[0] = d[1] = make_uint4(0, 0, 0, 0);
  }
}

//! The lane's 8 px of column sums, 16-bit pairs R|B and G|A, to dst[8 lane .. 8 lane + 7].
__device__ __forceinline__ void store_pairs8(uint2* dst, int lane, const std::uint32_t (&cRB)[8], const std::uint32_t (&cGA)[8]) {
  uint4* d = reinterpret_cast<uint4*>(dst + 8 * lane);
#pragma unroll
  for (int h = 0; h < 4; ++h) d[h] = make_uint4(cRB[2 * h], cGA[2 * h], cRB[2 * h + 1], cGA[2 * h + 1]);
}

__global__ void __launch_bounds__(NW * 32, 1) phased_kernel(const __grid_constant__ CUtensorMap tmap, params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (shared_address(smem_raw) & 1023u)) & 1023u);
  const int w = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  // A's tiles go round the blocks first (warp w of block b starts at w x blocks + b).
  const int gw = w * int(gridDim.x) + int(blockIdx.x), NWt = int(gridDim.x) * NW;
  const int tiles = p.ntx * p.nty;
  auto stamp = [&](int s) {
    if (p.stamps && threadIdx.x == 0) p.stamps[stamp_index(int(blockIdx.x), s, 0, nstamps, 1)] = canopy::detail::global_timer_ns();
  };
  stamp(0);
  if (p.mode == 3) return;

  // ------------------------------------------------------------------ A: tile and group sums
  {
    const std::uint64_t pol = policy_evict_last();
    for (int t = gw; t < tiles; t += NWt) {
      const int i = t / p.ntx, j = t % p.ntx, y0 = i * TH, x0 = j * RW;
      const int rows = min(TH, p.H - y0);
      std::uint32_t cRB[8] = {}, cGA[8] = {};
      std::uint32_t myRB = 0, myGA = 0;  // row `lane`'s sum
      for (int rb = 0; rb < rows; rb += 8) {
        uint4 v[8][2];
#pragma unroll
        for (int q = 0; q < 8; ++q) load_px8(p, y0 + rb + q, x0, rb + q < rows, pol, lane, v[q]);
#pragma unroll
        for (int g = 0; g < 8; g += 4) {
          std::uint32_t sRB[4], sGA[4];
          sum_four_rows(v + g, cRB, cGA, sRB, sGA);
#pragma unroll
          for (int q = 0; q < 4; ++q)
            if (rb + g + q == lane) {
              myRB = sRB[q];
              myGA = sGA[q];
            }
        }
      }
      if (lane < rows) p.R[std::size_t(j) * p.H + y0 + lane] = make_uint2(myRB, myGA);
      const uint4 total = warp_sum4(rgba_of_pairs(myRB, myGA));  // rows past the image summed to 0
      store_pairs8(p.C + std::size_t(i) * p.W + x0, lane, cRB, cGA);
      if (lane == 0) p.T[std::size_t(i) * p.ntx + j] = total;
      // The last tile of group (g, j) to be summed sums the group.
      const int g = i / GT, g0 = g * GT, n_g = min(GT, p.nty - g0);
      __threadfence();
      __syncwarp();
      unsigned last = 0;
      if (lane == 0) last = (atomicAdd(&p.gcnt[std::size_t(g) * p.ntx + j], 1u) + 1u) % unsigned(n_g) == 0u;
      if (__shfl_sync(~0u, last, 0)) {
        __threadfence();
        std::uint32_t aRB[8] = {}, aGA[8] = {};
        uint4 u[GT][4];  // every tile's loads in flight at once
#pragma unroll
        for (int ii = 0; ii < GT; ++ii) {
          const uint4* src = reinterpret_cast<const uint4*>(p.C + std::size_t(g0 + ii) * p.W + x0 + 8 * lane);
#pragma unroll
          for (int h = 0; h < 4; ++h) u[ii][h] = ii < n_g ? __ldcg(src + h) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int ii = 0; ii < GT; ++ii)
#pragma unroll
          for (int h = 0; h < 4; ++h) {
            aRB[2 * h] += u[ii][h].x, aGA[2 * h] += u[ii][h].y, aRB[2 * h + 1] += u[ii][h].z, aGA[2 * h + 1] += u[ii][h].w;
          }
        store_pairs8(p.CS + std::size_t(g) * p.W + x0, lane, aRB, aGA);
        uint4 tt = lane < n_g ? __ldcg(&p.T[std::size_t(g0 + lane) * p.ntx + j]) : make_uint4(0, 0, 0, 0);
        tt = warp_sum4(tt);
        if (lane == 0) p.GTT[std::size_t(g) * p.ntx + j] = tt;
      }
    }
  }
  stamp(1);
  grid_barrier(p.bar, p.target);
  stamp(2);
  if (p.mode == 2) return;

  // ------------------------------------------------------------------ B: the table, a tile a block
  // Software-pipelined by one tile: while a block walks tile k (its values in shared buffer k & 1,
  // its rows in registers), the loads of tile k + 1 are in flight; after the walk they are reduced
  // into buffer (k + 1) & 1. Tiles are claimed two ahead.
  const layout L(p.D);
  uint4* stage = reinterpret_cast<uint4*>(smem + L.stage) + std::size_t(w) * p.D * RW;
  uint4* tot_s = reinterpret_cast<uint4*>(smem + L.tot);
  uint2* colw_s = reinterpret_cast<uint2*>(smem + L.colw);
  uint4* rc_s = reinterpret_cast<uint4*>(smem + L.rc);
  uint4* rcp_s = reinterpret_cast<uint4*>(smem + L.rcp);
  uint4* corner_s = reinterpret_cast<uint4*>(smem + L.corner);
  int* ring = reinterpret_cast<int*>(smem + L.ring);
  const std::uint64_t pol_first = canopy::detail::l2_evict_first_policy();
  const bool write = p.mode != 1;
  int sidx = 0;
  auto tile_of = [&](unsigned raw) {
    const unsigned c = raw - p.claim_base;
    return c < unsigned(tiles) ? int(c) : tiles;
  };
  // Loads of tile `it` in flight (registers), then their reduction into buffer b.
  uint4 pxn[RPW][2];   // this warp's rows
  uint2 pcs[max_pieces];  // warp w: pixels 32 w + lane of each piece
  uint2 rv[max_left];     // warp 0: row `lane`'s sum over each region to the left
  uint4 kv[8];            // warp 1: corner terms
  auto issue = [&](int it) {
    const int i = it / p.ntx, j = it % p.ntx, y0 = i * TH, x0 = j * RW;
    const int rows = min(TH, p.H - y0), r0 = w * RPW;
    const int gi = i / GT, npieces = gi + (i - gi * GT);
#pragma unroll
    for (int q = 0; q < RPW; ++q) load_px8(p, y0 + r0 + q, x0, r0 + q < rows, pol_first, lane, pxn[q]);
    const int x = x0 + 32 * w + lane;
#pragma unroll
    for (int pc = 0; pc < max_pieces; ++pc)
      pcs[pc] = pc >= npieces ? make_uint2(0, 0)
                : pc < gi     ? __ldcg(&p.CS[std::size_t(pc) * p.W + x])
                              : __ldcg(&p.C[std::size_t(gi * GT + pc - gi) * p.W + x]);
    if (w == 0) {
#pragma unroll
      for (int q = 0; q < max_left; ++q)
        rv[q] = lane < rows && q < j ? __ldcg(&p.R[std::size_t(q) * p.H + y0 + lane]) : make_uint2(0, 0);
    } else if (w == 1) {
      const int n1 = gi * j, n2 = (i - gi * GT) * j;
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        const int idx = 32 * q + lane, e = idx - n1;
        kv[q] = idx >= n1 + n2 ? make_uint4(0, 0, 0, 0)
                : idx < n1     ? __ldcg(&p.GTT[std::size_t(idx / j) * p.ntx + idx % j])
                               : __ldcg(&p.T[std::size_t(gi * GT + e / j) * p.ntx + e % j]);
      }
    }
  };
  auto reduce = [&](int b) {
    {
      uint4 t = make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int pc = 0; pc < max_pieces; ++pc) t = add4(t, rgba_of_pairs(pcs[pc].x, pcs[pc].y));
      const int x = 32 * w + lane;
      tot_s[std::size_t(b) * RW + swz8(x >> 3, x & 7)] = t;
    }
    if (w == 0) {
      uint4 r = make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int q = 0; q < max_left; ++q) r = add4(r, rgba_of_pairs(rv[q].x, rv[q].y));
      rc_s[b * TH + lane] = r;
      rcp_s[b * TH + lane] = warp_inclusive_sum4(r);
    } else if (w == 1) {
      uint4 k = make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int q = 0; q < 8; ++q) k = add4(k, kv[q]);
      k = warp_sum4(k);
      if (lane == 0) corner_s[b] = k;
    }
    std::uint32_t cRB[8] = {}, cGA[8] = {};
#pragma unroll
    for (int q = 0; q < RPW; ++q) {
      const std::uint32_t v[8] = {pxn[q][0].x, pxn[q][0].y, pxn[q][0].z, pxn[q][0].w, pxn[q][1].x, pxn[q][1].y, pxn[q][1].z, pxn[q][1].w};
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        cRB[u] += v[u] & 0x00FF00FFu;
        cGA[u] += (v[u] >> 8) & 0x00FF00FFu;
      }
    }
#pragma unroll
    for (int q = 0; q < 8; ++q) colw_s[(std::size_t(b) * NW + w) * RW + swz8(lane, q)] = make_uint2(cRB[q], cGA[q]);
  };

  if (threadIdx.x == 0) {
    ring[0] = tile_of(atomicAdd(p.claim, 1u));
    ring[1] = tile_of(atomicAdd(p.claim, 1u));
  }
  __syncthreads();
  int item = ring[0], next = ring[1];
  if (item < tiles) {
    issue(item);
    reduce(0);
  }
  __syncthreads();
  for (int k = 0; item < tiles; ++k) {
    const int b = k & 1;
    unsigned ahead = 0;
    if (threadIdx.x == 0) ahead = atomicAdd(p.claim, 1u);  // tile k + 2
    uint4 px[RPW][2];
#pragma unroll
    for (int q = 0; q < RPW; ++q) px[q][0] = pxn[q][0], px[q][1] = pxn[q][1];
    if (next < tiles) issue(next);
    const int i = item / p.ntx, j = item % p.ntx, y0 = i * TH, x0 = j * RW;
    const int rows = min(TH, p.H - y0), r0 = w * RPW;
    // The table row above this warp's first row.
    uint4 S[8];
    {
      std::uint32_t aRB[8] = {}, aGA[8] = {};  // the tile's rows above this warp's (at most 28 rows: 16 bits)
      for (int ww = 0; ww < w; ++ww)
#pragma unroll
        for (int q = 0; q < 8; ++q) {
          const uint2 u = colw_s[(std::size_t(b) * NW + ww) * RW + swz8(lane, q)];
          aRB[q] += u.x;
          aGA[q] += u.y;
        }
#pragma unroll
      for (int q = 0; q < 8; ++q) S[q] = add4(tot_s[std::size_t(b) * RW + swz8(lane, q)], rgba_of_pairs(aRB[q], aGA[q]));
#pragma unroll
      for (int q = 1; q < 8; ++q) S[q] = add4(S[q], S[q - 1]);
      uint4 off = add4(warp_exclusive_sum4(S[7]), corner_s[b]);
      if (r0 > 0) off = add4(off, rcp_s[b * TH + r0 - 1]);
#pragma unroll
      for (int q = 0; q < 8; ++q) S[q] = add4(S[q], off);
    }
    // Walk this warp's rows, two at a time.
#pragma unroll
    for (int q0 = 0; q0 < RPW; q0 += 2) {
      if (r0 + q0 >= rows) break;
      std::uint32_t rb[2][8], ga[2][8], e[4];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint4 a = px[q0 + h][0], c = px[q0 + h][1];
        const std::uint32_t v[8] = {a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w};
        rb[h][0] = v[0] & 0x00FF00FFu;
        ga[h][0] = (v[0] >> 8) & 0x00FF00FFu;
#pragma unroll
        for (int u = 1; u < 8; ++u) {
          rb[h][u] = rb[h][u - 1] + (v[u] & 0x00FF00FFu);
          ga[h][u] = ga[h][u - 1] + ((v[u] >> 8) & 0x00FF00FFu);
        }
        e[2 * h] = rb[h][7];
        e[2 * h + 1] = ga[h][7];
      }
      warp_inclusive_sums(e, lane);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + q0 + h;
        if (r >= rows) break;
        const std::uint32_t eRB = e[2 * h] - rb[h][7], eGA = e[2 * h + 1] - ga[h][7];
        const uint4 carry = rc_s[b * TH + r];
        uint4* st = stage + std::size_t(sidx) * RW;
        if (lane == 0) bulk_wait_read(p.D - 1);
        __syncwarp();
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          S[u] = add4(S[u], add4(rgba_of_pairs(rb[h][u] + eRB, ga[h][u] + eGA), carry));
          st[swz8(lane, u)] = S[u];
        }
        fence_proxy_async();
        __syncwarp();
        if (write && lane == 0) tensor_store(&tmap, st, 0, x0 / 8, y0 + r, pol_first);
        if (++sidx == p.D) sidx = 0;
      }
    }
    if (next < tiles) reduce(b ^ 1);
    if (threadIdx.x == 0) ring[(k + 2) & 3] = tile_of(ahead);
    __syncthreads();
    item = next;
    next = ring[(k + 2) & 3];
  }
  if (lane == 0) bulk_wait_all();
  __syncthreads();
  stamp(3);
}

struct config {
  int D;  // staging rows a warp
};

std::vector<config> parse_configs(const std::string& s) {
  std::vector<config> out;
  for (const std::string& one : config_items(s)) {
    config c{2};
    char tail = 0;
    if (std::sscanf(one.c_str(), "%d%c", &c.D, &tail) != 1 || c.D < 1 || c.D > 3) {
      std::printf("canopy-sat-phased: bad configuration '%s' (D, staging rows a warp, 1 to 3)\n", one.c_str());
      std::exit(canopy_bench::exit_bad_command_line);
    }
    out.push_back(c);
  }
  return out;
}

std::string name_of(const config& c) { return "D" + std::to_string(c.D); }

//! One configuration over one image: its scratch, tensor map and launch.
struct plan {
  params p{};
  CUtensorMap tm{};
  int blocks = 0;
  std::size_t smem = 0;
  unsigned epoch = 0, claim_builds = 0;  // builds; builds that claimed B's tiles
  std::vector<void*> owned;
  template <class T>
  T* alloc(std::size_t n) {
    void* q = nullptr;
    CK(cudaMalloc(&q, std::max<std::size_t>(n * sizeof(T), 16)));
    CK(cudaMemset(q, 0, std::max<std::size_t>(n * sizeof(T), 16)));
    owned.push_back(q);
    return static_cast<T*>(q);
  }
  ~plan() {
    for (void* q : owned) cudaFree(q);
  }
  bool make(const config& c, test_image& ti, std::string& why) {
    if (ti.w % RW) {
      why = "width not a multiple of 256";
      return false;
    }
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    p.img = ti.dimg;
    p.tab = ti.dtab;
    p.W = ti.w;
    p.H = ti.h;
    p.ntx = ti.w / RW;
    p.nty = (ti.h + TH - 1) / TH;
    p.ng = (p.nty + GT - 1) / GT;
    if (p.ng - 1 + GT - 1 > max_pieces || p.ntx - 1 > max_left) {
      why = "more pieces or regions than B holds";
      return false;
    }
    p.R = alloc<uint2>(std::size_t(p.ntx) * p.H);
    p.C = alloc<uint2>(std::size_t(p.nty) * p.W);
    p.T = alloc<uint4>(std::size_t(p.nty) * p.ntx);
    p.CS = alloc<uint2>(std::size_t(p.ng) * p.W);
    p.GTT = alloc<uint4>(std::size_t(p.ng) * p.ntx);
    p.gcnt = alloc<unsigned>(std::size_t(p.ng) * p.ntx);
    p.bar = alloc<unsigned>(1);
    p.claim = alloc<unsigned>(1);
    p.stamps = nullptr;
    p.D = c.D;
    smem = layout(c.D).bytes;
    if (smem > 227 * 1024) {
      why = "shared memory";
      return false;
    }
    CK(cudaFuncSetAttribute(reinterpret_cast<const void*>(phased_kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, phased_kernel, NW * 32, smem));
    if (per_sm < 1) {
      why = "no block fits an SM";
      return false;
    }
    blocks = sms;
    return table_tensor_map("canopy-sat-phased", ti.dtab, ti.w, ti.h, tm, why);
  }
  void launch(int mode, unsigned long long* stamps = nullptr) {
    params q = p;
    q.mode = mode;
    q.stamps = stamps;
    if (mode != 3) {
      ++epoch;
      q.target = epoch * unsigned(blocks);
      q.claim_base = claim_builds * unsigned(p.ntx * p.nty + 2 * blocks);  // each block claims two tiles past the last
      if (mode != 2) ++claim_builds;
    }
    void* args[] = {&tm, &q};
    CK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(phased_kernel), dim3(blocks), dim3(NW * 32), args, smem, nullptr));
  }
};

//! A stamped build's phase ends over the blocks (stamps [blocks][nstamps]: stamp_table with one
//! "chunk").
void stamp_report(const unsigned long long* dstamps, int blocks) {
  const stamp_table st(dstamps, blocks, nstamps, 1);
  const double t0 = st.earliest(0, 0);
  const char* names[nstamps] = {"start", "A done", "barrier", "B done"};
  std::printf("    stamps (us from the first start: min / p50 / max over blocks):");
  for (int s = 0; s < nstamps; ++s) {
    std::vector<double> d;
    for (int b = 0; b < blocks; ++b) d.push_back((st.at(b, s, 0) - t0) * 1e-3);
    std::sort(d.begin(), d.end());
    std::printf(" %s %.1f/%.1f/%.1f;", names[s], d[0], d[d.size() / 2], d.back());
  }
  std::printf("\n");
}

}  // namespace phased

int main(int argc, char** argv) {
  using namespace phased;
  bool small_only = false, timed_only = false, once = false;  // once: one checked build a case (for profilers)
  std::string cfgs = "2,1,3";
  std::vector<std::array<int, 2>> timed_sizes = {{3840, 2160}, {4096, 2160}};
  try {
    canopy_bench::command_line cl(argc, argv, "canopy-sat-phased");
    while (cl.next()) {
      if (cl.is("--small")) small_only = true;
      else if (cl.is("--timed")) timed_only = true;
      else if (cl.is("--once")) once = timed_only = true;
      else if (cl.is("--configs")) cfgs = cl.value();
      else if (cl.is("--checked-builds")) checked_builds = canopy_bench::parse_int(cl.value(), "canopy-sat-phased", "--checked-builds", 0, 100000);
      else if (cl.is("--sizes")) {
        timed_sizes.clear();
        for (const std::string& s : config_items(cl.value())) {
          int w = 0, h = 0;
          if (std::sscanf(s.c_str(), "%dx%d", &w, &h) != 2 || w < 1 || h < 1) {
            std::printf("canopy-sat-phased: bad size '%s'\n", s.c_str());
            return canopy_bench::exit_bad_command_line;
          }
          timed_sizes.push_back({w, h});
        }
      } else cl.refuse_unknown();
    }
  } catch (const canopy_bench::bad_flag& e) {
    std::printf("%s\nusage: canopy-sat-phased [--small | --timed] [--configs D,...] [--sizes WxH,...] [--checked-builds N]\n",
                e.what());
    return canopy_bench::exit_bad_command_line;
  }
  if (!cuda_device_present("canopy-sat-phased")) return 77;
  const auto configs = parse_configs(cfgs);
  bool all_ok = true;
  unsigned long long* dstamps = nullptr;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaMalloc(&dstamps, std::size_t(sms) * 4 * nstamps * 8));
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  std::printf("canopy-sat-phased: %d SMs, L2 %.1f MB\n", sms, l2 / 1048576.0);

  if (!timed_only) {
    const std::vector<std::array<int, 2>> small = {{256, 1}, {256, 33}, {512, 47}, {1024, 100}, {768, 1000}, {2048, 300}, {512, 2049}};
    for (const auto& sz : small)
      for (int bright = 0; bright < 2; ++bright) {
        test_image ti(sz[0], sz[1], false, bright != 0);
        for (const config& c : configs) {
          plan pl;
          std::string why;
          if (!pl.make(c, ti, why)) {
            std::printf("  %dx%d%s %s: not run (%s)\n", ti.w, ti.h, ti.label(), name_of(c).c_str(), why.c_str());
            continue;
          }
          bool ok = true;
          for (int b = 0; b <= checked_builds && ok; ++b) {
            CK(cudaMemset(ti.dtab, 0xA5, ti.npx * 16));
            pl.launch(0);
            ok = ti.table_exact(name_of(c), "build", all_ok);
          }
          if (ok) std::printf("  %dx%d%s %s: exact\n", ti.w, ti.h, ti.label(), name_of(c).c_str());
        }
      }
  }
  if (!small_only) {
    for (const auto& sz : timed_sizes) {
      test_image ti(sz[0], sz[1], true);
      for (const config& c : configs) {
        plan pl;
        std::string why;
        if (!pl.make(c, ti, why)) {
          std::printf("  %s: not run (%s)\n", name_of(c).c_str(), why.c_str());
          continue;
        }
        CK(cudaMemset(ti.dtab, 0xA5, ti.npx * 16));
        pl.launch(0);
        const bool first_ok = ti.table_exact(name_of(c), "first build", all_ok);
        if (once) {
          std::printf("  %dx%d %s: one build, %s\n", ti.w, ti.h, name_of(c).c_str(), first_ok ? "exact" : "WRONG");
          continue;
        }
        const double us = timed_us([&] { pl.launch(0); });
        const bool last_ok = ti.table_exact(name_of(c), "after the timed builds", all_ok);
        const double nostore = timed_us([&] { pl.launch(1); });
        const double sums = timed_us([&] { pl.launch(2); });  // A and the barrier
        const double empty = timed_us([&] { pl.launch(3); });
        const double pct = 100.0 * ti.bytes / us * 1e-3 / ti.copy_gbps;
        std::printf("  %dx%d %s: %.1f us, %.1f%% of copy%s | nostore %.1f us | A %.1f us | empty %.1f us\n", ti.w, ti.h,
                    name_of(c).c_str(), us, pct, first_ok && last_ok ? " (exact)" : " WRONG", nostore, sums, empty);
        pl.launch(0, dstamps);
        stamp_report(dstamps, pl.blocks);
        CK(cudaMemset(ti.dtab, 0xA5, ti.npx * 16));
        pl.launch(0);
        ti.table_exact(name_of(c), "stamped build", all_ok);
      }
    }
  }
  cudaFree(dstamps);
  std::printf("canopy-sat-phased: %s\n", all_ok ? "ok" : "FAILED (tables differ from the reference)");
  return all_ok ? 0 : 1;
}
