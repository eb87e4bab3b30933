// canopy-sat-pipelined: a measuring prototype (not the library's kernel; CUDA builds only, sm_90,
// not run by CTest) of a SAT for RGBA8 -> u32 (docs/sat.md, "Pipelined resident chunks", session 19).
//
// Session 18's resident chunks ran load, sums, grid barrier, carries and walk in turn, and lost the
// fill, a 5-6 us gap at every chunk (the slowest block's sums, the barrier and the carries, with no
// stores in flight) and an uneven end; its walk, one warp scan a 32-px group, cost 37-40 us of a
// block's time with no stores at all. This form takes those off the store stream's path:
//   - two image buffers in shared memory: chunk c + 1 is loaded, summed, exchanged and turned into
//     carries by producer warps while walker warps write chunk c;
//   - a walker lane holds 8 consecutive pixels of a 256-px region row: one warp scan a row (10
//     shuffles for 256 px, against 96 a row in session 18's walk);
//   - the row goes to a swizzled staging row in shared memory and from there to the table by a
//     tensor bulk store (TMA, 128-byte swizzle, so the lanes' writes are free of bank conflicts),
//     or, for comparison, back through shared memory into 512-byte st.global instructions.
// Regions: Gx = W / 256 region columns, Gy region rows a chunk, one block an SM (cooperative launch),
// RH rows a region (RH0 in chunk 0, the last chunk's rows spread evenly). A block has P producer
// warps and K walker warps; walker k owns the k-th of K bands of the region's rows.
// Loads: chunks 0 and 1 at the start, chunk c + 2 into buffer c & 1 as soon as the last walker is
// done with chunk c (a shared-memory counter), each producer warp's bands on its own mbarrier.
// Producers, chunk c: sum the region's rows four at a time (row sums, band and region column sums as
// 16-bit channel pairs, total), publish row sums, column sums and total to a global slot, and read
// back with one set of bulk copies the row sums left of the region, the column sums of its region
// column and every total: after a grid barrier (red.release on a counter a chunk, epoch-tagged), or
// with `tagged`, with no barrier, as 64-bit words that carry the chunk's tag, read again until all
// are current (three slots). Then they leave the walkers each row's carry (Rl) and the table row
// above the region (Tinit); the column sums above the chunk and the sum above it left of the region
// are running sums in the Tinit warp's registers.
// Modes: "exact"; diagnostics "nostore" (everything but the table stores; not checked) and "empty"
// (launch and set-up). Stamps (globaltimer) mark each chunk's load, sums, publication, release,
// exchange read, carries, walk start and walk end; the report gives each block's end, its walkers'
// waits and the tagged exchange's reads a chunk. Tables are checked
// exactly against a CPU reference (random and all-255 images); timings are medians against a
// device-to-device copy of a table-sized buffer in the same run. Exits 1 if a table is wrong.
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

namespace pipelined {

constexpr int MAX_CHUNKS = 64;
constexpr int MAX_WARPS = 16;
// Stamps a chunk: 0 producer warp 0's rows loaded, 1 published, 2 released, 3 walk start, 4 walk
// end (walker 0), 5 SM id (chunk 0 only), 6 the last producer warp's rows loaded, 7 summed, 8 the
// exchange's reads arrived (tagged: all current), 9 carries ready, 10 reads the exchange took (a count).
constexpr int NSTAMP = 11;
using u64 = unsigned long long;

// region_params plus this form's own. Slots: row sums [slots][Gy][Gx][RHs] (R|B, G|A pairs; tagged:
// two 64-bit words a row), column sums [slots][Gy][Gx][RW], totals [slots][Gy][Gx]; two slots, or
// three tagged. Modes: 0 exact, 2 no table stores, 3 empty (set-up only).
struct params : region_params {
  int P, K, D;                   // producers, walkers, staging rows a walker
  int RH0, RH, RHL, RHmax;       // rows a region: chunk 0, later chunks, the last chunk; the most
  int RHs;                       // RHmax rounded up to even: the row sums' stride (16-byte pieces)
  int store;                     // 0: staging read back into st.global; 1: tensor bulk store
  int tagged;                    // (host) which kernel: 0 grid barrier, then one read; 1 tagged words
  unsigned seq0;                 // tagged: chunk c's words carry tag seq0 + c (and an 8-bit form of it)
  int pre;                       // L2 reuse experiment: producers also read chunk c + 2's rows from global
                                 // after chunk c's carries (1: evict_last loads, 2: plain loads), 0 off
  int sh;                        // 1: the table's tensor stores carry an L2 evict_first hint
};

//! Shared-memory layout (byte offsets from a 1024-byte aligned base).
struct layout {
  std::size_t stage, img, bandcol, tinit, rl, xchg, xrow, xcol, xtot, regcol, wtot, mbar, bytes;
  __host__ __device__ layout(int RHmax, int RHs, int P, int K, int D, int Gx, int Gy, int tagged) {
    std::size_t o = 0;
    stage = o;  // [K][D][RW] uint4, 4 KB rows (1024-byte aligned for the 128-byte swizzle)
    o += std::size_t(K) * D * RW * 16;
    img = o;  // [2][RHmax][RW] words
    o += 2 * std::size_t(RHmax) * RW * 4;
    bandcol = o;  // [2][K][RW] uint2: each walker band's column sums
    o += 2 * std::size_t(K) * RW * 8;
    tinit = o;  // [2][RW] uint4: the table row above the region
    o += 2 * std::size_t(RW) * 16;
    rl = o;  // [2][RHmax] uint4: each row's carry
    o += 2 * std::size_t(RHmax) * 16;
    // The exchange's reads, copied in after the grid barrier: row sums of the regions left of this
    // one [Gx - 1][RHs] uint2, column sums of its region column [Gy][RW] uint2, every total
    // [Gy][Gx] uint4. Before the barrier the same bytes hold each producer's column sums
    // (regcol, [P][RW] uint2).
    xchg = o;
    xrow = o;
    xcol = xrow + std::size_t(Gx - 1) * RHs * (tagged ? 16 : 8);
    xtot = xcol + std::size_t(Gy) * RW * 8;
    regcol = o;
    o += std::max(xtot + std::size_t(Gy) * Gx * 16 - o, std::size_t(P) * RW * 8);
    wtot = o;  // [P] uint4
    o += std::size_t(P) * 16;
    mbar = o;  // load[2][P], ready[2], exchange; then done[2] (u32 counters)
    o += std::size_t(2 * P + 3) * 8 + 8;
    bytes = o;
  }
};


// Tagged exchange words (64-bit, each written by one store, so a reader sees a word whole): a row
// sum is two words {pair, 32-bit tag}; a column sum (<= 64 rows of 8-bit values: 14 bits a
// channel) one word R | G << 14 | B << 28 | A << 42 | tag8 << 56; a total (<= 64 x 256 x 255:
// 24 bits a channel) two words R | G << 24 | tag8 << 56 and B | A << 24 | tag8 << 56.
__device__ __forceinline__ u64 col_word(std::uint32_t rb, std::uint32_t ga, unsigned tag8) {
  return u64(rb & 0xFFFFu) | u64(ga & 0xFFFFu) << 14 | u64(rb >> 16) << 28 | u64(ga >> 16) << 42 | u64(tag8) << 56;
}
__device__ __forceinline__ uint4 col_of(u64 v) {
  return make_uint4(unsigned(v & 0x3FFF), unsigned(v >> 14 & 0x3FFF), unsigned(v >> 28 & 0x3FFF), unsigned(v >> 42 & 0x3FFF));
}
__device__ __forceinline__ uint4 total_of(u64 a, u64 b) {
  return make_uint4(unsigned(a & 0xFFFFFF), unsigned(a >> 24 & 0xFFFFFF), unsigned(b & 0xFFFFFF), unsigned(b >> 24 & 0xFFFFFF));
}
//! Whether any of the producer warps' threads has `bad` set (a named-barrier reduction).
__device__ __forceinline__ bool any_of_producers(bool bad, int threads) {
  unsigned r;
  asm volatile("{ .reg .pred q, o; setp.ne.u32 q, %1, 0; bar.red.or.pred o, 1, %2, q; selp.u32 %0, 1, 0, o; }"
               : "=r"(r)
               : "r"(unsigned(bad)), "r"(threads)
               : "memory");
  return r != 0;
}

template <bool TAGGED>
__global__ void __launch_bounds__(MAX_WARPS * 32, 1) sat_pipelined(const __grid_constant__ CUtensorMap tmap, params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (shared_address(smem_raw) & 1023u)) & 1023u);
  const layout L(p.RHmax, p.RHs, p.P, p.K, p.D, p.Gx, p.Gy, TAGGED);
  std::uint32_t* img_s = reinterpret_cast<std::uint32_t*>(smem + L.img);
  uint4* stage = reinterpret_cast<uint4*>(smem + L.stage);
  uint2* bandcol = reinterpret_cast<uint2*>(smem + L.bandcol);
  uint4* tinit = reinterpret_cast<uint4*>(smem + L.tinit);
  uint4* rl_s = reinterpret_cast<uint4*>(smem + L.rl);
  uint2* regcol = reinterpret_cast<uint2*>(smem + L.regcol);
  uint4* wtot = reinterpret_cast<uint4*>(smem + L.wtot);
  unsigned long long* loadbar = reinterpret_cast<unsigned long long*>(smem + L.mbar);  // [2][P]
  unsigned long long* ready = loadbar + 2 * p.P;                                  // [2]
  unsigned long long* xbar = ready + 2;                                            // the exchange's copies
  unsigned* done = reinterpret_cast<unsigned*>(xbar + 1);                     // [2]: walkers done with a buffer
  const uint2* xrow = reinterpret_cast<const uint2*>(smem + L.xrow);
  const ulonglong2* xrow64 = reinterpret_cast<const ulonglong2*>(smem + L.xrow);
  const u64* xcol64 = reinterpret_cast<const u64*>(smem + L.xcol);
  const u64* xtot64 = reinterpret_cast<const u64*>(smem + L.xtot);
  const uint2* xcol = reinterpret_cast<const uint2*>(smem + L.xcol);
  const uint4* xtot = reinterpret_cast<const uint4*>(smem + L.xtot);
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, P = p.P, K = p.K;
  const int blk = blockIdx.x, I = blk / p.Gx, J = blk % p.Gx, x0 = J * RW;
  auto stamp = [&](int s, int c) {
    if (p.stamps) p.stamps[stamp_index(blk, s, c, NSTAMP, MAX_CHUNKS)] = global_ns();
  };
  if (threadIdx.x == 0) {
    for (int i = 0; i < 2 * P; ++i) mbarrier_init_only(&loadbar[i], 1);
    for (int b = 0; b < 2; ++b) {
      mbarrier_init_only(&ready[b], unsigned(P) * 32);  // every producer lane arrives after its writes
      done[b] = 0;
    }
    mbarrier_init_only(xbar, 1);
    mbarrier_init_visible();
    if (p.stamps) p.stamps[stamp_index(blk, 5, 0, NSTAMP, MAX_CHUNKS)] = smid();
  }
  __syncthreads();
  if (p.mode == 3) return;

  // Bulk copies of chunk c's region rows into buffer c & 1 (one thread), each producer warp's bands
  // on its own mbarrier. Chunks 0 and 1 are requested here; chunk c + 2 by the last walker done with
  // chunk c, so a load never waits for the producers.
  const std::uint64_t pol = policy_evict_first();
  auto load_chunk = [&](int c) {
    const int b = c & 1;
    int rh, top, n;
    region_rows(p, c, I, rh, top, n);
    std::uint32_t* buf = img_s + std::size_t(b) * p.RHmax * RW;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the walkers' reads of the buffer, then the copies' writes
    for (int pw = 0; pw < P; ++pw) {
      unsigned bytes = 0;
      for (int k = pw; k < K; k += P) {
        int r0, r1;
        band_rows(k, K, rh, n, r0, r1);
        bytes += unsigned(std::max(0, r1 - r0)) * RW * 4;
      }
      mbar_expect_tx(&loadbar[b * P + pw], bytes);
      for (int k = pw; k < K; k += P) {
        int r0, r1;
        band_rows(k, K, rh, n, r0, r1);
        for (int r = r0; r < r1; ++r)
          bulk_copy_to_shared<true>(buf + std::size_t(r) * RW, p.img + std::size_t(top + r) * p.W + x0, RW * 4, &loadbar[b * P + pw], pol);
      }
      mbar_arrive(&loadbar[b * P + pw]);
    }
  };
  if (threadIdx.x == 0)
    for (int c = 0; c < std::min(2, p.NC); ++c) load_chunk(c);

  if (w < P) {
    // ---------------------------------------------------------------- producers
    const int tw = P > 1 ? 1 : 0;                          // the warp that makes Tinit
    uint4 coltop[8];                                      // (warp tw) columns above the chunk
    uint4 leftabove = make_uint4(0, 0, 0, 0);             // (warp tw) above the chunk, left of the region
    for (int i = 0; i < 8; ++i) coltop[i] = make_uint4(0, 0, 0, 0);
    unsigned xphase = 0;  // parity of the exchange mbarrier's next phase
    for (int c = 0; c < p.NC; ++c) {
      const int b = c & 1, slot = TAGGED ? c % 3 : c & 1;
      const unsigned tag32 = p.seq0 + unsigned(c), tag8 = tag32 % 255u + 1u;
      int rh, top, n;
      region_rows(p, c, I, rh, top, n);
      const std::size_t base = (std::size_t(slot) * p.Gy + I) * p.Gx + J;
      std::uint32_t* buf = img_s + std::size_t(b) * p.RHmax * RW;
      // 1. This warp's bands of the chunk, requested by load_chunk.
      mbarrier_wait(&loadbar[b * P + w], unsigned(c >> 1) & 1u);
      if (w == 0 && lane == 0) stamp(0, c);
      if (w == P - 1 && lane == 0) stamp(6, c);
      // 2. Sums: row sums to global, band column sums to shared memory, region column sums.
      std::uint32_t cRB[8] = {}, cGA[8] = {};
      uint4 tot = make_uint4(0, 0, 0, 0);
      for (int k = w; k < K; k += P) {
        std::uint32_t bRB[8] = {}, bGA[8] = {};  // the band's column sums
        int r0, r1;
        band_rows(k, K, rh, n, r0, r1);
        for (int r = r0; r < r1; r += 4) {  // four rows at a time: four independent reductions
          std::uint32_t sRB[4], sGA[4], v[4][8];
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            if (r + q < r1) {
              row_words(buf, r + q, lane, v[q]);
            } else {
#pragma unroll
              for (int i = 0; i < 8; ++i) v[q][i] = 0;
            }
          }
          sum_rows(v, bRB, bGA, sRB, sGA);
#pragma unroll
          for (int q = 0; q < 4; ++q)
            if (r + q < r1) {
              if (lane == 0) {
                if constexpr (TAGGED)
                  reinterpret_cast<ulonglong2*>(p.rowsum)[base * p.RHs + r + q] =
                      make_ulonglong2(u64(sRB[q]) | u64(tag32) << 32, u64(sGA[q]) | u64(tag32) << 32);
                else
                  p.rowsum[base * p.RHs + r + q] = make_uint2(sRB[q], sGA[q]);
              }
              tot = add4(tot, rgba_of_pairs(sRB[q], sGA[q]));
            }
        }
        uint4* bc = reinterpret_cast<uint4*>(bandcol + (std::size_t(b) * K + k) * RW);
#pragma unroll
        for (int h = 0; h < 4; ++h) bc[bandcol_unit(lane, h)] = make_uint4(bRB[2 * h], bGA[2 * h], bRB[2 * h + 1], bGA[2 * h + 1]);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          cRB[i] += bRB[i];
          cGA[i] += bGA[i];
        }
      }
      {
        uint4* rc = reinterpret_cast<uint4*>(regcol + std::size_t(w) * RW + 8 * lane);
#pragma unroll
        for (int i = 0; i < 8; i += 2) rc[i / 2] = make_uint4(cRB[i], cGA[i], cRB[i + 1], cGA[i + 1]);
        if (lane == 0) wtot[w] = tot;
      }
      named_barrier(1, P * 32);
      if (threadIdx.x == 0) stamp(7, c);
      for (int x = threadIdx.x; x < RW; x += P * 32) {
        std::uint32_t a = 0, bb = 0;
        for (int v = 0; v < P; ++v) {
          const uint2 t = regcol[v * RW + x];
          a += t.x;
          bb += t.y;
        }
        if constexpr (TAGGED) reinterpret_cast<u64*>(p.colsum)[base * RW + x] = col_word(a, bb, tag8);
        else p.colsum[base * RW + x] = make_uint2(a, bb);
      }
      if (threadIdx.x == 0) {
        uint4 t = make_uint4(0, 0, 0, 0);
        for (int v = 0; v < P; ++v) t = add4(t, wtot[v]);
        if constexpr (TAGGED)
          reinterpret_cast<ulonglong2*>(p.total)[base] =
              make_ulonglong2(u64(t.x) | u64(t.y) << 24 | u64(tag8) << 56, u64(t.z) | u64(t.w) << 24 | u64(tag8) << 56);
        else
          p.total[base] = t;
      }
      named_barrier(1, P * 32);
      if (threadIdx.x == 0) stamp(1, c);
      // 3 and 4. The exchange's reads: one set of bulk copies of every word the carries need
      // (row sums left of the region, column sums of its region column, every total). Untagged:
      // after a grid barrier, once. Tagged: no barrier; read until every word carries this chunk's tag.
      if (!TAGGED && threadIdx.x == 0) {
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(&p.cnt[c]) : "memory");
        while (ld_acquire_gpu(&p.cnt[c]) < p.target) {
        }
      }
      const std::size_t rowword = TAGGED ? 16 : 8, slotbase = std::size_t(slot) * p.Gy * p.Gx;
      const std::size_t rowbytes = std::size_t(J) * p.RHs * rowword;
      for (unsigned attempt = 1;; ++attempt) {
        named_barrier(1, P * 32);  // the barrier's release (untagged) or every check of the last read (tagged)
        if (threadIdx.x == 0) {
          if (attempt == 1) stamp(2, c);
          asm volatile("fence.proxy.async;" ::: "memory");  // acquired words and regcol, then the async proxy
          mbar_expect_tx(xbar, unsigned(rowbytes + std::size_t(p.Gy) * RW * 8 + std::size_t(p.Gy) * p.Gx * 16));
          if (rowbytes)
            bulk_copy_to_shared<false>(smem + L.xrow, reinterpret_cast<const unsigned char*>(p.rowsum) + (slotbase + std::size_t(I) * p.Gx) * p.RHs * rowword, unsigned(rowbytes), xbar, 0);
          for (int i = 0; i < p.Gy; ++i)
            bulk_copy_to_shared<false>(smem + L.xcol + std::size_t(i) * RW * 8, p.colsum + (slotbase + std::size_t(i) * p.Gx + J) * RW, RW * 8, xbar, 0);
          bulk_copy_to_shared<false>(smem + L.xtot, p.total + slotbase, unsigned(p.Gy * p.Gx * 16), xbar, 0);
          mbar_arrive(xbar);
        }
        mbarrier_wait(xbar, xphase);
        xphase ^= 1u;
        if constexpr (!TAGGED) break;
        bool bad = false;
        for (int idx = threadIdx.x; idx < J * n; idx += P * 32) {
          const ulonglong2 v = xrow64[(idx / n) * p.RHs + idx % n];
          bad |= unsigned(v.x >> 32) != tag32 || unsigned(v.y >> 32) != tag32;
        }
        for (int idx = threadIdx.x; idx < p.Gy * RW; idx += P * 32) bad |= unsigned(xcol64[idx] >> 56) != tag8;
        for (int idx = threadIdx.x; idx < 2 * p.Gy * p.Gx; idx += P * 32) bad |= unsigned(xtot64[idx] >> 56) != tag8;
        if (!any_of_producers(bad, P * 32)) {
          if (threadIdx.x == 0 && p.stamps) p.stamps[stamp_index(blk, 10, c, NSTAMP, MAX_CHUNKS)] = attempt;
          break;
        }
      }
      if (threadIdx.x == 0) stamp(8, c);
      uint4* rl = rl_s + std::size_t(b) * p.RHmax;
      if (w == 0)  // Rl[r]: rows 0..r of the region, left of it
        row_carries(n, lane, rl, [&](int r) {
          uint4 s = make_uint4(0, 0, 0, 0);
          for (int j = 0; j < J; ++j) {
            if constexpr (TAGGED) {
              const ulonglong2 t = xrow64[j * p.RHs + r];
              s = add4(s, rgba_of_pairs(unsigned(t.x), unsigned(t.y)));
            } else {
              s = add4(s, rgba_of_pairs(xrow[j * p.RHs + r]));
            }
          }
          return s;
        });
      if (w == tw)  // Tinit[x]: the table row above the region
        table_row_above(
            p.Gy, I, J, lane, coltop, leftabove, tinit + std::size_t(b) * RW,
            [&](int i, int j) {
              return TAGGED ? total_of(xtot64[2 * (i * p.Gx + j)], xtot64[2 * (i * p.Gx + j) + 1]) : xtot[i * p.Gx + j];
            },
            [&](int ii, uint4(&q)[8]) {
              const uint4* cs = reinterpret_cast<const uint4*>(xcol + std::size_t(ii) * RW + 8 * lane);
              const ulonglong2* cs64 = reinterpret_cast<const ulonglong2*>(xcol64 + std::size_t(ii) * RW + 8 * lane);
#pragma unroll
              for (int h = 0; h < 4; ++h) {
                if constexpr (TAGGED) {
                  const ulonglong2 t = cs64[h];
                  q[2 * h] = col_of(t.x);
                  q[2 * h + 1] = col_of(t.y);
                } else {
                  const uint4 t = cs[h];
                  q[2 * h] = rgba_of_pairs(t.x, t.y);
                  q[2 * h + 1] = rgba_of_pairs(t.z, t.w);
                }
              }
            });
      named_barrier(1, P * 32);  // the exchange's bytes are the next chunk's regcol
      if (threadIdx.x == 0) stamp(9, c);
      mbar_arrive(&ready[b]);
      if (p.pre && c + 2 < p.NC) {  // L2 reuse experiment: read chunk c + 2's rows now; walkers load them later
        int rh2, top2, n2;
        region_rows(p, c + 2, I, rh2, top2, n2);
        const std::uint64_t lp = policy_evict_last();
        std::uint32_t acc = 0;
#pragma unroll 4
        for (int r = w; r < n2; r += P) {
          const uint4* row = reinterpret_cast<const uint4*>(p.img + std::size_t(top2 + r) * p.W + x0) + 2 * lane;
          const uint4 a = p.pre == 1 ? load_policy(row, lp) : __ldg(row), b2 = p.pre == 1 ? load_policy(row + 1, lp) : __ldg(row + 1);
          acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b2.x ^ b2.y ^ b2.z ^ b2.w;
        }
        asm volatile("" ::"r"(acc));
      }
    }
  } else {
    // ---------------------------------------------------------------- walkers
    const int k = w - P;
    uint4* my_stage = stage + std::size_t(k) * p.D * RW;
    int sidx = 0;
    const std::uint64_t spol = policy_evict_first();
    for (int c = 0; c < p.NC; ++c) {
      const int b = c & 1;
      int rh, top, n, r0, r1;
      region_rows(p, c, I, rh, top, n);
      band_rows(k, K, rh, n, r0, r1);
      const std::uint32_t* buf = img_s + std::size_t(b) * p.RHmax * RW;
      mbarrier_wait(&ready[b], unsigned(c >> 1) & 1u);
      if (k == 0 && lane == 0) stamp(3, c);
      if (r0 < r1) {
        const band_walk walk{buf, bandcol + std::size_t(b) * K * RW, tinit + std::size_t(b) * RW, rl_s + std::size_t(b) * p.RHmax,
                             my_stage, p.D, p.store, p.mode != 2, p.sh != 0, spol, &tmap, p.tab, p.W, x0, top};
        walk.run(k, r0, r1, lane, sidx);
      }
      __syncwarp();
      if (lane == 0) {  // the last walker done with the buffer requests chunk c + 2 into it
        __threadfence_block();
        if (atomicAdd(&done[b], 1u) % unsigned(K) == unsigned(K - 1) && c + 2 < p.NC) {
          __threadfence_block();
          load_chunk(c + 2);
        }
      }
      if (k == 0 && lane == 0) stamp(4, c);
    }
    if (lane == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}

struct config {
  int P, K, Gy, RH0, RH, D, store, tagged, pre, sh;
};

const void* kernel_for(int tagged) {
  return tagged ? reinterpret_cast<const void*>(sat_pipelined<true>) : reinterpret_cast<const void*>(sat_pipelined<false>);
}
std::vector<config> parse_configs(const std::string& s, const char* program) {
  std::vector<config> out;
  for (const std::string& one : config_items(s)) {
    config c{0, 0, 0, 0, 0, 1, 1, 0, 0, 0};
    if (std::sscanf(one.c_str(), "%d:%d:%d:%d:%d:%d:%d:%d:%d:%d", &c.P, &c.K, &c.Gy, &c.RH0, &c.RH, &c.D, &c.store, &c.tagged, &c.pre, &c.sh) < 5 ||
        c.P < 1 || c.pre < 0 || c.pre > 2 || c.sh < 0 || c.sh > 1 ||
        c.K < 1 || c.P + c.K > MAX_WARPS || c.Gy < 1 || c.RH0 < 1 || c.RH < 1 || c.RH0 > (c.tagged ? 64 : 257) ||
        c.RH > (c.tagged ? 64 : 257) || c.D < 1 || c.D > 3 || c.store < 0 || c.store > 1 || c.tagged < 0 || c.tagged > 1) {
      std::printf("%s: bad configuration '%s' (P:K:Gy:RH0:RH[:D[:store[:tagged[:pre[:sh]]]]], P + K <= 16, RH0 and RH <= 257 (64 tagged), "
                  "D 1 to 3, store, tagged and sh 0 or 1, pre 0 to 2)\n",
                  program, one.c_str());
      std::exit(canopy_bench::exit_bad_command_line);
    }
    out.push_back(c);
  }
  return out;
}

std::string name_of(const config& c) {
  return std::to_string(c.P) + ":" + std::to_string(c.K) + ":" + std::to_string(c.Gy) + ":" + std::to_string(c.RH0) + ":" +
         std::to_string(c.RH) + ":" + std::to_string(c.D) + ":" + std::to_string(c.store) + ":" + std::to_string(c.tagged) +
         (c.pre || c.sh ? ":" + std::to_string(c.pre) + ":" + std::to_string(c.sh) : std::string());
}

struct runner : region_exchange {
  int W, H;
  runner(int W_, int H_) : region_exchange(MAX_CHUNKS, NSTAMP), W(W_), H(H_) {}
  bool plan(const config& c, const std::uint32_t* img, uint4* tab, params& p, CUtensorMap& tm, std::size_t& smem, std::string& why) {
    p = params{};
    if (!begin_plan(p, img, tab, W, H, RW, c.Gy, why)) return false;
    p.P = c.P;
    p.K = c.K;
    p.D = c.D;
    p.store = c.store;
    p.tagged = c.tagged;
    p.pre = c.pre;
    p.sh = c.sh;
    if (!plan_chunks(p, c.RH0, c.RH, why)) return false;
    smem = layout(p.RHmax, p.RHs, c.P, c.K, c.D, p.Gx, p.Gy, c.tagged).bytes + 1024;  // + the alignment slack
    if (!fits(p.Gx, p.NC, kernel_for(c.tagged), (c.P + c.K) * 32, smem, why)) return false;
    clear_slots();  // tagged words of an earlier plan must not pass for current ones
    return table_tensor_map("canopy-sat-pipelined", tab, W, H, tm, why);
  }
  void launch(const CUtensorMap& tm, params p, std::size_t smem, int mode, bool stamped = false) {
    next_build(p, mode, stamped);
    p.seq0 = epoch * unsigned(MAX_CHUNKS) + 1u;  // a tag is never 0, the cleared slots' value
    CUtensorMap t = tm;
    void* args[] = {&t, &p};
    CK(cudaLaunchCooperativeKernel(kernel_for(p.tagged), dim3(p.Gx * p.Gy), dim3((p.P + p.K) * 32), args, smem,
                                   nullptr));
  }
};

}  // namespace pipelined

int main(int argc, char** argv) {
  using namespace pipelined;
  return run_prototype(
      argc, argv, "canopy-sat-pipelined", "P:K:Gy:RH0:RH[:D[:store[:tagged[:pre[:sh]]]]]", "4:6:8:16:70,4:6:8:16:64:1:1:1",
      "4:6:4:16:70,4:6:4:16:64:1:1:1", "2:4:2:3:5:2:1,1:3:3:2:7:1:0,4:8:8:4:9:3:1,2:6:1:9:13:2:1,2:4:2:3:5:1:1:1,1:3:3:2:7:2:1:1,3:6:1:9:13:1:1:1,2:4:2:3:5:1:1:0:1:1,3:6:1:9:13:1:1:0:2:0",
      {{256, 1}, {256, 33}, {1024, 100}, {512, 47}, {2048, 300}, {768, 1000}, {3840, 2160}, {7680, 4320}}, parse_configs,
      [](test_image& ti, bool timed, const std::vector<config>& configs, bool& all_ok) {
        run_region_configs<runner, params>(ti, timed, configs, all_ok, "P:K:Gy:RH0:RH:D:store:tagged", name_of, [](runner& run, const params& p) {
          const int B = p.Gx * p.Gy;
          const stamp_table st(run.stamps, B, NSTAMP, MAX_CHUNKS);
          if (p.tagged) {
            double sum = 0, mx = 0;
            for (int bl = 0; bl < B; ++bl)
              for (int ch = 0; ch < p.NC; ++ch) {
                const double a = st.at(bl, 10, ch);
                sum += a;
                mx = std::max(mx, a);
              }
            std::printf("    tagged exchange: %.2f reads a chunk on average, at most %.0f\n", sum / (double(B) * p.NC), mx);
          }
          print_stamp_report(st, B, p.Gx, p.NC, NSTAMP, "loaded", "last warp");
        });
      });
}
