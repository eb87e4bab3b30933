// canopy-sat-lookahead: a measuring prototype (not the library's kernel; CUDA builds only, sm_90,
// not run by CTest) of a SAT for RGBA8 -> u32 (docs/sat.md, "Sums read ahead from L2", session 20).
//
// Session 19's pipelined chunks summed a chunk from its image buffer in shared memory, so the sums,
// the exchange and the carries of chunk c + 2 could start only once the walkers had left the buffer
// with chunk c, and that chain (about 15 us) was longer than a walk (about 10 us). Session 20
// measured that an image row read again about one walk after its first read still comes from L2
// (a 4K build read 33.3 MB of DRAM either way). So here the sums read the image straight from
// global memory, ahead of the walkers and independent of the buffers:
//   - summer warps (K, one a band): chunk c's rows, loaded into registers (8 rows a lane at a
//     time), give row sums, band and region column sums and the total; they are published to one
//     of eight global slots, then red.release on the chunk's counter;
//   - carrier warps (2): wait for chunk c's counter, read what the carries need with one set of
//     bulk copies (or, xg, loads from L2), and make each row's carry (warp 0) and the table row
//     above the region (warp 1);
//   - walker warps (K): as in canopy-sat-pipelined, from two image buffers loaded by bulk copies
//     (the second read of the rows, from L2), through tensor bulk stores, by default with an L2
//     evict_first hint (sh), which is what keeps the image rows in L2 until that second read.
// Carry slots (band column sums, row carries, the table row above) come in NS = 3 or 4, so summers
// and carriers run up to NS - 1 chunks ahead of the walkers; an mbarrier a slot says when the
// walkers have left it. Eight exchange slots: a block publishes chunk c only after its walkers
// finished chunk c - NS, which needs every block's chunk c - NS published, which needs every
// block's carries of chunk c - 2 NS.
// Loads: each walker refills its own band of the buffer with chunk c + 2 as soon as it has walked
// chunk c (bl; the last walker done refills every band where the bands move between the chunks).
// Options (measured, docs/sat.md): pf, an L2 prefetch of the next chunk's rows; ahead, the next
// chunk's first rows loaded before this one is published; ll, evict_last on the summers' loads.
// Modes: "exact"; "nostore" (everything but the table stores; not checked), "empty" (set-up only).
// Tables are checked exactly against a CPU reference (random and all-255 images); timings are
// medians against a device-to-device copy of a table-sized buffer in the same run.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sat_region_walk.cuh"

using namespace sat_proto;
using namespace sat_proto::region_walk;
#define CK SAT_PROTO_CHECK

namespace lookahead {

constexpr int MAX_CHUNKS = 64;
constexpr int MAX_WARPS = 16;
constexpr int MAXNS = 4;       // carry slots in shared memory: NS = 3 or 4
constexpr int XS = 2 * MAXNS;  // exchange slots in global memory
constexpr int MAXB = 8;  // rows a summer lane holds at once
constexpr int MAXK = 7;  // walkers (and summers) a block
// Stamps a chunk: 0 summers start (summer 0), 1 published, 2 released (carrier 0 saw the counter),
// 3 walk start, 4 walk end (walker 0), 5 SM id (chunk 0 only), 6 walker 0's buffer loaded, 7 summed
// (the summers' first barrier), 8 the exchange's reads arrived, 9 carries ready.
constexpr int NSTAMP = 11;

struct params : region_params {
  int K, D;                // walkers (and summers), staging rows a walker
  int pf;                  // 1: summers prefetch the next chunk's rows into L2
  int ahead;               // 1: summers load the next chunk's first MAXB rows before publishing this one
  int NS;                  // carry slots (3 or 4): summers and carriers run up to NS - 1 chunks ahead
  int xg;                  // the carriers' exchange reads: 0 one set of bulk copies, 1 loads from L2
  int sh;                  // 1: the table's tensor stores carry an L2 evict_first hint
  int ll;                  // 1: the summers' loads carry an L2 evict_last hint
  int bl;                  // 1: each walker refills its own band's rows of the buffer as soon as it is done with them
                           // (when chunk c + 2 has chunk c's rows a region); 0: the last walker done refills all bands
  int RH0, RH, RHL, RHmax;  // rows a region: chunk 0, later chunks, the last chunk; the most
  int RHs;                 // RHmax rounded up to even: the row sums' stride
};

//! Shared-memory layout (byte offsets from a 1024-byte aligned base).
struct layout {
  std::size_t stage, img, bandcol, tinit, rl, xrow, xcol, xtot, wtot, mbar, bytes;
  __host__ __device__ layout(int RHmax, int RHs, int K, int D, int Gx, int Gy, int NS, int xg) {
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
    // The exchange's bulk copies (xg 0): row sums of the regions left of this one [Gx - 1][RHs]
    // uint2, column sums of its region column [Gy][RW] uint2, every total [Gy][Gx] uint4.
    xrow = o;
    if (!xg) o += std::size_t(Gx - 1) * RHs * 8;
    xcol = o;
    if (!xg) o += std::size_t(Gy) * RW * 8;
    xtot = o;
    if (!xg) o += std::size_t(Gy) * Gx * 16;
    wtot = o;  // [K] uint4: band totals
    o += std::size_t(K) * 16;
    mbar = o;  // load[2][MAXK], ready[MAXNS], freed[MAXNS], exchange; then done[2] (u32 counters)
    o += std::size_t(2 * MAXK + 2 * MAXNS + 1) * 8 + 8;
    bytes = o;
  }
};

__device__ __forceinline__ void prefetch_l2(const void* a, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"(bytes) : "memory");
}

__global__ void __launch_bounds__(MAX_WARPS * 32, 1) sat_lookahead(const __grid_constant__ CUtensorMap tmap, params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (shared_address(smem_raw) & 1023u)) & 1023u);
  const int K = p.K;
  const int NS = p.NS;
  const layout L(p.RHmax, p.RHs, K, p.D, p.Gx, p.Gy, NS, p.xg);
  std::uint32_t* img_s = reinterpret_cast<std::uint32_t*>(smem + L.img);
  uint4* stage = reinterpret_cast<uint4*>(smem + L.stage);
  uint2* bandcol = reinterpret_cast<uint2*>(smem + L.bandcol);
  uint4* tinit = reinterpret_cast<uint4*>(smem + L.tinit);
  uint4* rl_s = reinterpret_cast<uint4*>(smem + L.rl);
  uint4* wtot = reinterpret_cast<uint4*>(smem + L.wtot);
  unsigned long long* loadbar = reinterpret_cast<unsigned long long*>(smem + L.mbar);  // [2][MAXK]: band k's rows of buffer b
  unsigned long long* ready = loadbar + 2 * MAXK;                                  // [MAXNS]
  unsigned long long* freed = ready + MAXNS;                                       // [MAXNS]
  unsigned long long* xbar = freed + MAXNS;                                        // the exchange's copies
  unsigned* done = reinterpret_cast<unsigned*>(xbar + 1);                     // [2]: walkers done with a buffer
  const uint2* xrow = reinterpret_cast<const uint2*>(smem + L.xrow);
  const uint2* xcol = reinterpret_cast<const uint2*>(smem + L.xcol);
  const uint4* xtot = reinterpret_cast<const uint4*>(smem + L.xtot);
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int blk = blockIdx.x, I = blk / p.Gx, J = blk % p.Gx, x0 = J * RW;
  auto stamp = [&](int s, int c) {
    if (p.stamps) p.stamps[stamp_index(blk, s, c, NSTAMP, MAX_CHUNKS)] = global_ns();
  };
  if (threadIdx.x == 0) {
    for (int b = 0; b < 2; ++b) {
      for (int k = 0; k < MAXK; ++k) mbarrier_init_only(&loadbar[b * MAXK + k], 1);
      done[b] = 0;
    }
    for (int s = 0; s < MAXNS; ++s) {
      mbarrier_init_only(&ready[s], unsigned(K + 2) * 32);  // every summer and carrier lane, after its writes
      mbarrier_init_only(&freed[s], unsigned(K));           // every walker warp, after its reads
    }
    mbarrier_init_only(xbar, 1);
    mbarrier_init_visible();
    if (p.stamps) p.stamps[stamp_index(blk, 5, 0, NSTAMP, MAX_CHUNKS)] = smid();
  }
  __syncthreads();
  if (p.mode == 3) return;

  // Bulk copies of band k's rows of chunk c into buffer c & 1, on loadbar[c & 1][k], a row a lane of
  // the calling warp. Each walker requests its band of chunks 0 and 1 at the start, and of chunk
  // c + 2 once it is done with chunk c (bl) or, where the bands move, the last walker done with
  // chunk c requests every band.
  // Band k of region row I in chunk c: its rows [r0, r1), the region's first at image row `top`.
  auto band_of = [&](int c, int k, int& top, int& r0, int& r1) {
    int rh, n;
    region_rows(p, c, I, rh, top, n);
    band_rows(k, K, rh, n, r0, r1);
  };
  auto load_band = [&](int c, int k) {
    const int b = c & 1;
    int top, r0, r1;
    band_of(c, k, top, r0, r1);
    unsigned long long* m = &loadbar[b * MAXK + k];
    std::uint32_t* buf = img_s + std::size_t(b) * p.RHmax * RW;
    const std::uint64_t pol = policy_evict_first();  // the summers have read the rows already (most often)
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
    const std::uint64_t lpol = policy_evict_last();
    uint4 v[MAXB][2];  // up to MAXB rows of the band, 8 px a lane
    // Band k's rows [rb, min(rb + MAXB, r1)) (image rows from `top`) into v; zeros past r1.
    auto load_batch = [&](int top, int rb, int r1) {
#pragma unroll
      for (int q = 0; q < MAXB; ++q) {
        if (rb + q < r1) {
          const uint4* row = reinterpret_cast<const uint4*>(p.img + std::size_t(top + rb + q) * p.W + x0) + 2 * lane;
          v[q][0] = p.ll ? load_policy(row, lpol) : __ldg(row);
          v[q][1] = p.ll ? load_policy(row + 1, lpol) : __ldg(row + 1);
        } else {
          v[q][0] = v[q][1] = make_uint4(0, 0, 0, 0);
        }
      }
    };
    if (p.ahead) {
      int top, r0, r1;
      band_of(0, k, top, r0, r1);
      load_batch(top, r0, r1);
    }
    for (int c = 0; c < p.NC; ++c) {
      const int s = c % NS, xs = c % XS;
      int top, r0, r1;
      band_of(c, k, top, r0, r1);
      if (p.pf && c + 1 < p.NC) {  // the next chunk's band rows into L2, a row a lane
        int top1, q0, q1;
        band_of(c + 1, k, top1, q0, q1);
        for (int r = q0 + lane; r < q1; r += 32) prefetch_l2(p.img + std::size_t(top1 + r) * p.W + x0, RW * 4);
      }
      if (c >= NS) mbarrier_wait(&freed[s], unsigned((c - NS) / NS) & 1u);  // the walkers left slot s (chunk c - NS)
      if (k == 0 && lane == 0) stamp(0, c);
      const std::size_t base = (std::size_t(xs) * p.Gy + I) * p.Gx + J;
      std::uint32_t bRB[8] = {}, bGA[8] = {};  // the band's column sums
      uint4 tot = make_uint4(0, 0, 0, 0);
      for (int rb = r0; rb < r1; rb += MAXB) {
        if (rb != r0 || !p.ahead) load_batch(top, rb, r1);  // (ahead: the first batch is in v already)
#pragma unroll
        for (int g = 0; g < MAXB; g += 4) {  // four rows at a time: four independent reductions
          std::uint32_t sRB[4], sGA[4], words[4][8];
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const uint4 a = v[g + q][0], b = v[g + q][1];
            words[q][0] = a.x, words[q][1] = a.y, words[q][2] = a.z, words[q][3] = a.w;
            words[q][4] = b.x, words[q][5] = b.y, words[q][6] = b.z, words[q][7] = b.w;
          }
          sum_rows(words, bRB, bGA, sRB, sGA);
#pragma unroll
          for (int q = 0; q < 4; ++q)
            if (rb + g + q < r1) {
              if (lane == 0) p.rowsum[base * p.RHs + rb + g + q] = make_uint2(sRB[q], sGA[q]);
              tot = add4(tot, rgba_of_pairs(sRB[q], sGA[q]));
            }
        }
      }
      if (p.ahead && c + 1 < p.NC) {  // the next chunk's first batch, in flight during the publication
        int t1, q0, q1;
        band_of(c + 1, k, t1, q0, q1);
        load_batch(t1, q0, q1);
      }
      uint4* bc = reinterpret_cast<uint4*>(bandcol + (std::size_t(s) * K + k) * RW);
#pragma unroll
      for (int h = 0; h < 4; ++h) bc[bandcol_unit(lane, h)] = make_uint4(bRB[2 * h], bGA[2 * h], bRB[2 * h + 1], bGA[2 * h + 1]);
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
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(&p.cnt[c]) : "memory");
        stamp(1, c);
      }
      mbar_arrive(&ready[s]);
    }
  } else if (w < K + 2) {
    // ---------------------------------------------------------------- carriers
    const bool rows = w == K;                             // warp K: row carries; warp K + 1: Tinit
    uint4 coltop[8];                                      // (Tinit warp) columns above the chunk
    uint4 leftabove = make_uint4(0, 0, 0, 0);             // (Tinit warp) above the chunk, left of the region
    for (int i = 0; i < 8; ++i) coltop[i] = make_uint4(0, 0, 0, 0);
    for (int c = 0; c < p.NC; ++c) {
      const int s = c % NS, xs = c % XS;
      int rh, top, n;
      region_rows(p, c, I, rh, top, n);
      const std::size_t slotbase = std::size_t(xs) * p.Gy * p.Gx;
      if (rows && lane == 0) {
        while (ld_acquire_gpu(&p.cnt[c]) < p.target) {
        }
        stamp(2, c);
      }
      if (p.xg) {
        named_barrier(2, 64);  // the release, acquired by carrier 0's lane 0, orders both carriers' loads
      } else if (rows && lane == 0) {
        asm volatile("fence.proxy.async;" ::: "memory");  // acquired words, then the async proxy
        const std::size_t rowbytes = std::size_t(J) * p.RHs * 8;
        mbar_expect_tx(xbar, unsigned(rowbytes + std::size_t(p.Gy) * RW * 8 + std::size_t(p.Gy) * p.Gx * 16));
        if (rowbytes) bulk_copy_to_shared<false>(smem + L.xrow, p.rowsum + (slotbase + std::size_t(I) * p.Gx) * p.RHs, unsigned(rowbytes), xbar, 0);
        for (int i = 0; i < p.Gy; ++i)
          bulk_copy_to_shared<false>(smem + L.xcol + std::size_t(i) * RW * 8, p.colsum + (slotbase + std::size_t(i) * p.Gx + J) * RW, RW * 8, xbar, 0);
        bulk_copy_to_shared<false>(smem + L.xtot, p.total + slotbase, unsigned(p.Gy * p.Gx * 16), xbar, 0);
        mbar_arrive(xbar);
      }
      if (!p.xg) mbarrier_wait(xbar, unsigned(c) & 1u);
      if (rows && lane == 0) stamp(8, c);
      if (c >= NS) mbarrier_wait(&freed[s], unsigned((c - NS) / NS) & 1u);
      if (rows) {  // Rl[r]: rows 0..r of the region, left of it
        const uint2* g = p.rowsum + (slotbase + std::size_t(I) * p.Gx) * p.RHs;
        row_carries(n, lane, rl_s + std::size_t(s) * p.RHmax, [&](int r) {
          uint4 sum = make_uint4(0, 0, 0, 0);
          if (p.xg) {
#pragma unroll 8
            for (int j = 0; j < J; ++j) sum = add4(sum, rgba_of_pairs(__ldcg(g + std::size_t(j) * p.RHs + r)));
          } else {
            for (int j = 0; j < J; ++j) sum = add4(sum, rgba_of_pairs(xrow[j * p.RHs + r]));
          }
          return sum;
        });
      } else {  // Tinit[x]: the table row above the region
        table_row_above(
            p.Gy, I, J, lane, coltop, leftabove, tinit + std::size_t(s) * RW,
            [&](int i, int j) { return p.xg ? __ldcg(p.total + slotbase + std::size_t(i) * p.Gx + j) : xtot[i * p.Gx + j]; },
            [&](int ii, uint4(&q)[8]) {
              const uint4* cs = reinterpret_cast<const uint4*>(xcol + std::size_t(ii) * RW + 8 * lane);
              const uint4* gs = reinterpret_cast<const uint4*>(p.colsum + (slotbase + std::size_t(ii) * p.Gx + J) * RW + 8 * lane);
              uint4 tt[4];
#pragma unroll
              for (int h = 0; h < 4; ++h) tt[h] = p.xg ? __ldcg(gs + h) : cs[h];
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
    const std::uint64_t spol = policy_evict_first();
    uint4* my_stage = stage + std::size_t(k) * p.D * RW;
    int sidx = 0;
    for (int c = 0; c < std::min(2, p.NC); ++c) load_band(c, k);
    for (int c = 0; c < p.NC; ++c) {
      const int b = c & 1, s = c % NS;
      int rh, top, n, r0, r1;
      region_rows(p, c, I, rh, top, n);
      band_rows(k, K, rh, n, r0, r1);
      mbarrier_wait(&loadbar[b * MAXK + k], unsigned(c >> 1) & 1u);
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
                             p.mode != 2,
                             p.sh != 0,
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
      if (c + 2 < p.NC) {  // chunk c + 2 into the buffer
        int s2, rh2;
        chunk_geometry(p, c + 2, s2, rh2);
        if (p.bl && rh2 == rh) {
          load_band(c + 2, k);  // the same rows as this walker's band of chunk c: nobody else reads them
        } else {
          unsigned last = 0;
          if (lane == 0) {
            __threadfence_block();
            last = atomicAdd(&done[b], 1u) % unsigned(K) == unsigned(K - 1);
            __threadfence_block();
          }
          if (__shfl_sync(~0u, last, 0))
            for (int kk = 0; kk < K; ++kk) load_band(c + 2, kk);
        }
      }
      if (k == 0 && lane == 0) stamp(4, c);
    }
    if (lane == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}

struct config {
  int K, Gy, RH0, RH, D, pf, ahead, NS, xg, sh, ll, bl;
};

std::vector<config> parse_configs(const std::string& s, const char* program) {
  std::vector<config> out;
  for (const std::string& one : config_items(s)) {
    config c{0, 0, 0, 0, 1, 0, 0, 3, 0, 1, 0, 1};
    if (std::sscanf(one.c_str(), "%d:%d:%d:%d:%d:%d:%d:%d:%d:%d:%d:%d", &c.K, &c.Gy, &c.RH0, &c.RH, &c.D, &c.pf, &c.ahead, &c.NS, &c.xg, &c.sh,
                    &c.ll, &c.bl) < 4 || c.ll < 0 || c.ll > 1 || c.bl < 0 || c.bl > 1 || c.K > MAXK ||
        c.K < 1 || 2 * c.K + 2 > MAX_WARPS || c.Gy < 1 || c.RH0 < 1 || c.RH < 1 || c.RH0 > 257 || c.RH > 257 || c.D < 1 || c.D > 3 ||
        c.pf < 0 || c.pf > 1 || c.ahead < 0 || c.ahead > 1 || c.NS < 3 || c.NS > MAXNS || c.xg < 0 || c.xg > 1 || c.sh < 0 || c.sh > 1) {
      std::printf("%s: bad configuration '%s' (K:Gy:RH0:RH[:D[:pf[:ahead[:NS[:xg[:sh[:ll[:bl]]]]]]]], K 1 to 7, RH0 and RH <= 257, "
                  "D 1 to 3, NS 3 or 4, pf, ahead, xg, sh, ll and bl 0 or 1)\n",
                  program, one.c_str());
      std::exit(canopy_bench::exit_bad_command_line);
    }
    out.push_back(c);
  }
  return out;
}

std::string name_of(const config& c) {
  return std::to_string(c.K) + ":" + std::to_string(c.Gy) + ":" + std::to_string(c.RH0) + ":" + std::to_string(c.RH) + ":" +
         std::to_string(c.D) + ":" + std::to_string(c.pf) + ":" + std::to_string(c.ahead) + ":" + std::to_string(c.NS) + ":" +
         std::to_string(c.xg) + ":" + std::to_string(c.sh) + ":" + std::to_string(c.ll) + ":" + std::to_string(c.bl);
}

struct runner : region_exchange {
  int W, H;
  runner(int W_, int H_) : region_exchange(MAX_CHUNKS, NSTAMP, XS), W(W_), H(H_) {}
  bool plan(const config& c, const std::uint32_t* img, uint4* tab, params& p, CUtensorMap& tm, std::size_t& smem, std::string& why) {
    p = params{};
    if (!begin_plan(p, img, tab, W, H, RW, c.Gy, why)) return false;
    p.K = c.K;
    p.D = c.D;
    p.pf = c.pf;
    p.ahead = c.ahead;
    p.NS = c.NS;
    p.xg = c.xg;
    p.sh = c.sh;
    p.ll = c.ll;
    p.bl = c.bl;
    if (!plan_chunks(p, c.RH0, c.RH, why)) return false;
    smem = layout(p.RHmax, p.RHs, c.K, c.D, p.Gx, p.Gy, c.NS, c.xg).bytes + 1024;  // + the alignment slack
    if (!fits(p.Gx, p.NC, reinterpret_cast<const void*>(sat_lookahead), (2 * c.K + 2) * 32, smem, why)) return false;
    return table_tensor_map("canopy-sat-lookahead", tab, W, H, tm, why);
  }
  void launch(const CUtensorMap& tm, params p, std::size_t smem, int mode, bool stamped = false) {
    next_build(p, mode, stamped);
    CUtensorMap t = tm;
    void* args[] = {&t, &p};
    CK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(sat_lookahead), dim3(p.Gx * p.Gy), dim3((2 * p.K + 2) * 32), args, smem,
                                   nullptr));
  }
};

}  // namespace lookahead

int main(int argc, char** argv) {
  using namespace lookahead;
  return run_prototype(
      argc, argv, "canopy-sat-lookahead", "K:Gy:RH0:RH[:D[:pf[:ahead[:NS[:xg[:sh[:ll[:bl]]]]]]]]", "7:8:16:56,7:8:16:48:1:0:0:4", "7:4:16:56,7:4:16:48:1:0:0:4",
      "4:2:3:5:2:1:1:3:0:0:1,3:3:2:7:1:0:0:4:1:1,6:8:4:9:3:1:0:4:1:0:1,6:1:9:13:2:1:0:3:0:1,7:2:3:21:1:1:1:4:0:1:1,1:3:3:2:1:0:0:3:1:0,5:1:30:17:1:1:1:4:0:0,7:1:9:60:1:0:1:3:1:1:1,2:2:5:40:1:0:0:4:0:1:0,4:3:6:19:1:0:1:3:0:1:0:0,3:2:3:9:2:0:0:4:0:1:0:0",
      {{256, 1}, {256, 33}, {1024, 100}, {512, 47}, {2048, 300}, {768, 1000}, {3840, 2160}, {7680, 4320}}, parse_configs,
      [](test_image& ti, bool timed, const std::vector<config>& configs, bool& all_ok) {
        run_region_configs<runner, params>(ti, timed, configs, all_ok, "K:Gy:RH0:RH:D:pf:ahead:NS:xg:sh:ll:bl", name_of, [](runner& run, const params& p) {
          const int B = p.Gx * p.Gy;
          print_stamp_report(stamp_table(run.stamps, B, NSTAMP, MAX_CHUNKS), B, p.Gx, p.NC, NSTAMP, "sums start", "walker 0's buffer");
        });
      });
}
