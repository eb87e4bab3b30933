// canopy-sat-chunks: a measuring prototype (not the library's kernel; CUDA builds only, not run by
// CTest) of a SAT for RGBA8 -> u32 whose carries cost one exchange of region aggregates per chunk
// of rows, and whose image is read once, into shared memory (docs/sat.md, "Chunks held in shared
// memory", session 17).
//
// - The image is cut into NC chunks of whole rows; each chunk into Gy x Gx regions, one per block
//   (block (I, J) always owns the region columns [J w, (J + 1) w), w = 128 B px, and in each chunk
//   the I-th piece of its rows). A region is at most RH rows and fits one of K shared-memory
//   buffers; the table is written from shared memory, so no pixel is read twice from memory.
// - Per chunk, each block publishes its region's row sums and column sums (16-bit channel pairs)
//   and its total as words tagged with the chunk's sequence number (epoch * 64 + chunk + 1), staged
//   in shared memory and sent with bulk copies; each chunk has its own global slot, so nothing is
//   overwritten while a build runs. A block then reads, spinning on the tags, the row sums of the
//   regions to its left, the column sums of its region column and the totals of all regions to the
//   left of its column. With two running sums each block keeps (column sums above the chunk, the
//   table value at its left edge above the chunk), these give the table's values along its
//   region's top row and left column. A block waits only on blocks to its left and in its column.
// - Roles, per unit (128 px x UR rows of a region):
//     * aggregator warp u sums unit u of each chunk once its rows have arrived (bulk copies on an
//       mbarrier); then all aggregators run the chunk's exchange together (named barrier 1) and
//       signal its carries;
//     * walker warp u scans unit u's rows down the unit with the column sums in registers, stores
//       each table row as 512 contiguous bytes a store instruction, and then requests unit u of
//       chunk c + K into the slot it has just walked (aggregator u, its only other reader, is done).
// - All blocks must be resident at once (cooperative launch; one block an SM).
// Modes: "exact"; diagnostics (tables wrong by design, not checked): "local" (no block reads
// another's words: the structure without the exchange) and both without the table stores. Stamps
// (globaltimer) break each chunk's exchange into publish, wait for the last dependency, reads and
// tail. Tables are checked exactly against a CPU reference; timings are
// canopy_bench::median_ms_on_stream medians against a device-to-device copy of a table-sized
// buffer in the same run. Exits 1 if a table is wrong.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <canopy/structures/detail/sat_kernels.cuh>

#include "sat_proto_common.cuh"

using namespace sat_proto;
#define CK SAT_PROTO_CHECK

namespace chunks {

constexpr int SW = 128;          // unit width (px): 4 a lane
constexpr int MAX_UNITS = 10;    // units a chunk a block (aggregator and walker warps each)
constexpr int MAX_THREADS = 2 * MAX_UNITS * 32;
constexpr int MAX_CHUNKS = 64;   // tag sequence: epoch * MAX_CHUNKS + chunk + 1
constexpr int NSTAMP = 8;        // carries, walked, summed, start, published, rows read, all read
using u64 = unsigned long long;

struct params {
  const std::uint32_t* img;
  uint4* tab;
  int W, H;
  int B, Gx, Gy, RH, UR, NC, NG, NU;  // NG = row groups a region, NU = B * NG
  int R0;                             // rows of chunk 0 (the rest split evenly over chunks 1..NC-1)
  int K;                              // chunk buffers in shared memory (2..4)
  int S;                              // 1: chunks 1..K-1 are requested only once chunk 0 has arrived
  unsigned seq0;                      // epoch * MAX_CHUNKS
  uint4 *RS, *CS, *T;                 // [NC][G][RH], [NC][G][w], [NC][G][2]: published tagged words
  int mode;                           // 0 exact; diagnostics: 1 local, 2 exact without table stores, 3 local without
  u64* stamps;                        // optional: [G][NSTAMP][MAX_CHUNKS] globaltimer ns
};

//! Shared-memory carve-up (bytes), the same on host and device; K buffers of everything that
//! belongs to one chunk.
struct layout {
  std::size_t img, kcol, lrow, ucs, segrs, ccarry, stage, rl, tot, pub, ctr, mbar, total;
  __host__ __device__ layout(int B, int RH, int NG, int NW, int K) {
    const std::size_t w = std::size_t(B) * SW;
    std::size_t o = 0;
    img = o;    o += K * std::size_t(RH) * w * 4;    // pixels of K chunks
    kcol = o;   o += K * w * 16;                     // column sums above the region top
    lrow = o;   o += K * std::size_t(B) * RH * 16;   // table value left of each unit, per row
    ucs = o;    o += K * std::size_t(NG) * w * 8;    // column sums of each unit (16-bit pairs)
    segrs = o;  o += K * std::size_t(RH) * B * 16;   // row sums of each unit's 128 px
    ccarry = o; o += w * 16;                         // column sums above the chunk
    stage = o;  o += std::size_t(NW) * 128 * 16;     // walkers' store stages
    rl = o;     o += std::size_t(RH) * 16;           // row sums left of the region (exchange)
    tot = o;    o += 16 * 16;                        // exchange scratch: z, unit column-sum totals
    pub = o;    o += (std::size_t(RH) + w + 2) * 16;  // tagged words being published
    ctr = o;    o += 64;
    mbar = o;   o += K * std::size_t(NW) * 8;        // one barrier a unit and buffer (bulk copies)
    total = o;
  }
};

//! First row of piece I of chunk c (I == Gy: the chunk's end).
__device__ __forceinline__ int piece_row(int c, int I, const struct params& p) {
  int lo, hi;
  if (c == 0) {
    lo = 0;
    hi = p.R0;
  } else {
    const long long rest = p.H - p.R0;
    lo = p.R0 + int(rest * (c - 1) / (p.NC - 1));
    hi = p.R0 + int(rest * c / (p.NC - 1));
  }
  return lo + int((long long)(hi - lo) * I / p.Gy);
}

//! Walkers done, by chunk mod K (a walker may run ahead of another, never by K chunks: chunk c + K
//! needs carries that wait for every walker of chunk c), and carries published (NU signals a chunk;
//! the aggregators pass barriers in every exchange).
struct counters {
  unsigned walked[4], carries;
};

__device__ __forceinline__ unsigned vload(const unsigned* p) { return *(volatile const unsigned*)p; }
__device__ __forceinline__ void wait_at_least(const unsigned* p, unsigned need, int lane) {
  if (lane == 0)
    while (vload(p) < need) __nanosleep(64);
  __syncwarp();
  __threadfence_block();
}
__device__ __forceinline__ void signal(unsigned* p, int lane) {
  __syncwarp();
  if (lane == 0) {
    __threadfence_block();
    atomicAdd(p, 1u);
  }
}
__device__ __forceinline__ void stamp(const params& p, int which, int c, int b) {
  if (p.stamps) p.stamps[stamp_index(b, which, c, NSTAMP, MAX_CHUNKS)] = global_ns();
}

//! {lo, tag, hi, tag}: four 16-bit channel sums a, packed in pairs, each half tagged.
__device__ __forceinline__ uint4 tag16(uint4 v, unsigned seq) { return make_uint4(v.x | (v.y << 16), seq, v.z | (v.w << 16), seq); }
__device__ __forceinline__ void ld_pair(const uint4* a, u64& lo, u64& hi) {
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(a) : "memory");
}
//! The channels of a tag16 word pair once both halves carry seq (re-reading until they do).
__device__ __forceinline__ uint4 settle16(const uint4* a, u64 lo, u64 hi, unsigned seq) {
  while (unsigned(lo >> 32) != seq || unsigned(hi >> 32) != seq) {
    __nanosleep(32);
    ld_pair(a, lo, hi);
  }
  const unsigned l = unsigned(lo), h = unsigned(hi);
  return make_uint4(l & 0xFFFFu, l >> 16, h & 0xFFFFu, h >> 16);
}
//! A published total: four {value, seq} words.
__device__ __forceinline__ uint4 settle_total(const uint4* a, unsigned seq) {
  u64 q0, q1, q2, q3;
  ld_pair(a, q0, q1);
  ld_pair(a + 1, q2, q3);
  while (unsigned(q0 >> 32) != seq || unsigned(q1 >> 32) != seq || unsigned(q2 >> 32) != seq || unsigned(q3 >> 32) != seq) {
    __nanosleep(32);
    ld_pair(a, q0, q1);
    ld_pair(a + 1, q2, q3);
  }
  return make_uint4(unsigned(q0), unsigned(q1), unsigned(q2), unsigned(q3));
}
__device__ __forceinline__ void bulk_store(void* g, const void* sm, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(g), "r"(shared_address(sm)), "r"(bytes)
               : "memory");
}

//! Barrier of the NU aggregator warps (named barrier 1).
__device__ __forceinline__ void agg_sync(int nu) { named_barrier(1, nu * 32); }

//! The exchange of chunk c, run by the NU aggregator warps once every unit of the chunk is summed:
//! this region's row sums, column sums and total to chunk c's global slot as tagged words; the
//! words of the regions to the left, of the region column and the totals left of it, read as their
//! tags arrive; then the carries: s_kcol (column sums above the region top), s_lrow (the table value
//! left of each unit, per row). Returns `rchunk` (warp 0's): the table value left of the region
//! column above the next chunk, carried from chunk to chunk like s_ccarry.
__device__ __noinline__ uint4 exchange(const params& p, int c, int warp, int lane, uint4 rchunk) {
  extern __shared__ __align__(16) unsigned char smem[];
  const layout L(p.B, p.RH, p.NG, p.NU, p.K);
  const int b = blockIdx.x, I = b / p.Gx, J = b % p.Gx, w = p.B * SW, G = p.Gx * p.Gy, nu = p.NU;
  const int nthr = nu * 32, t = warp * 32 + lane;
  uint4* s_kcol = reinterpret_cast<uint4*>(smem + L.kcol);
  uint4* s_lrow = reinterpret_cast<uint4*>(smem + L.lrow);
  const uint2* s_ucs = reinterpret_cast<const uint2*>(smem + L.ucs);
  const uint4* s_segrs = reinterpret_cast<const uint4*>(smem + L.segrs);
  uint4* s_ccarry = reinterpret_cast<uint4*>(smem + L.ccarry);
  uint4* s_rl = reinterpret_cast<uint4*>(smem + L.rl);
  uint4* s_tot = reinterpret_cast<uint4*>(smem + L.tot);  // [0] z, [1..B] unit column-sum totals
  const int ya = piece_row(c, I, p), yb = piece_row(c, I + 1, p), nrows = yb - ya, buf = c % p.K;
  const bool ex = p.mode == 0 || p.mode == 2;
  const unsigned seq = p.seq0 + unsigned(c) + 1u;
  if (warp == 0 && lane == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // the last chunk's staged words sent
  agg_sync(nu);  // every unit of the chunk summed
  if (warp == 0 && lane == 0) stamp(p, 2, c, b);
  // this region's row sums, column sums (16-bit channel pairs, each 32-bit half tagged with seq)
  // and total (four tagged 32-bit words), staged in shared memory and published with one bulk
  // copy each: no warp waits on a store or a fence, and readers poll the words themselves.
  uint4* pub_rs = reinterpret_cast<uint4*>(smem + L.pub);
  uint4* pub_cs = pub_rs + p.RH;
  uint4* pub_t = pub_cs + w;
  for (int r = t; r < nrows; r += nthr) {
    uint4 v = make_uint4(0, 0, 0, 0);
    for (int s = 0; s < p.B; ++s) v = add4(v, s_segrs[(std::size_t(buf) * p.RH + r) * p.B + s]);
    pub_rs[r] = tag16(v, seq);
    s_rl[r] = v;  // own row sums, for the total
  }
  const int ng = (nrows + p.UR - 1) / p.UR;
  for (int x = t; x < w; x += nthr) {
    uint4 v = make_uint4(0, 0, 0, 0);
    for (int gg = 0; gg < ng; ++gg) v = add4(v, rgba_of_pairs(s_ucs[(std::size_t(buf) * p.NG + gg) * w + x]));
    pub_cs[x] = tag16(v, seq);
  }
  agg_sync(nu);
  if (warp == 0) {
    uint4 tot = make_uint4(0, 0, 0, 0);
    for (int r = lane; r < nrows; r += 32) tot = add4(tot, s_rl[r]);
    tot = warp_sum4(tot);
    if (lane == 0) {
      pub_t[0] = make_uint4(tot.x, seq, tot.y, seq);
      pub_t[1] = make_uint4(tot.z, seq, tot.w, seq);
    }
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  agg_sync(nu);  // (also: warp 0 has read the own row sums in s_rl)
  if (warp == 0 && lane == 0) {
    if (nrows > 0) bulk_store(p.RS + (std::size_t(c) * G + b) * p.RH, pub_rs, unsigned(nrows) * 16);
    bulk_store(p.CS + (std::size_t(c) * G + b) * w, pub_cs, unsigned(w) * 16);
    bulk_store(p.T + (std::size_t(c) * G + b) * 2, pub_t, 32);
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    stamp(p, 4, c, b);
  }
  // row sums left of the region: lane = a block to the left, warp-reduced a row at a time, 4 rows in flight
  for (int r0 = warp * 4; r0 < nrows; r0 += nu * 4) {
    uint4 v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = make_uint4(0, 0, 0, 0);
    if (ex)
      for (int j2 = lane; j2 < J; j2 += 32) {
        const uint4* src = p.RS + (std::size_t(c) * G + I * p.Gx + j2) * p.RH;
        u64 q[4][2];
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (r0 + i < nrows) ld_pair(src + r0 + i, q[i][0], q[i][1]);
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (r0 + i < nrows) v[i] = add4(v[i], settle16(src + r0 + i, q[i][0], q[i][1], seq));
      }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[i] = warp_sum4(v[i]);
      if (lane == 0 && r0 + i < nrows) s_rl[r0 + i] = v[i];
    }
  }
  if (p.stamps) {
    agg_sync(nu);
    if (warp == 0 && lane == 0) stamp(p, 5, c, b);
  }
  // column sums above the region top, and the running column sums above the next chunk
  for (int x = t; x < w; x += nthr) {
    uint4 above = make_uint4(0, 0, 0, 0), all = make_uint4(0, 0, 0, 0);
    if (ex)
      for (int i0 = 0; i0 < p.Gy; i0 += 4) {
        // (the address written out in both loops: forming it once before them made ptxas spill more
        // around the exchange's call and cost 4-5% of the whole kernel, A/B on the H100)
        u64 q[4][2];
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (i0 + i < p.Gy) ld_pair(p.CS + (std::size_t(c) * G + (i0 + i) * p.Gx + J) * w + x, q[i][0], q[i][1]);
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (i0 + i < p.Gy) {
            const uint4 v = settle16(p.CS + (std::size_t(c) * G + (i0 + i) * p.Gx + J) * w + x, q[i][0], q[i][1], seq);
            all = add4(all, v);
            if (i0 + i < I) above = add4(above, v);
          }
      }
    const uint4 cc = s_ccarry[x];
    s_kcol[buf * w + x] = add4(cc, above);
    s_ccarry[x] = add4(cc, all);
  }
  if (warp == 0) {
    // totals left of the region column (all I'), and also above the region (I' < I)
    uint4 zin = make_uint4(0, 0, 0, 0), rall = make_uint4(0, 0, 0, 0);
    if (ex)
      for (int o = lane; o < G; o += 32)
        if (o % p.Gx < J) {
          const uint4 v = settle_total(p.T + (std::size_t(c) * G + o) * 2, seq);
          rall = add4(rall, v);
          if (o / p.Gx < I) zin = add4(zin, v);
        }
    zin = warp_sum4(zin);
    rall = warp_sum4(rall);
    if (lane == 0) s_tot[0] = add4(rchunk, zin);
    rchunk = add4(rchunk, rall);
  }
  agg_sync(nu);
  if (warp == 0 && lane == 0) stamp(p, 6, c, b);
  // unit column-sum totals (warp s), then the left-edge values of unit column s (warp s)
  for (int s = warp; s < p.B; s += nu) {
    uint4 k = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < 4; ++i) k = add4(k, s_kcol[buf * w + s * SW + 4 * lane + i]);
    k = warp_sum4(k);
    if (lane == 0) s_tot[1 + s] = k;
  }
  agg_sync(nu);
  for (int s = warp; s < p.B; s += nu) {
    uint4 base = s_tot[0];
    for (int s2 = 0; s2 < s; ++s2) base = add4(base, s_tot[1 + s2]);
    const int q = (nrows + 31) / 32;  // rows a lane, consecutive (<= 5)
    uint4 v[5], run = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < 5; ++i) {
      const int r = q * lane + i;
      uint4 e = make_uint4(0, 0, 0, 0);
      if (i < q && r < nrows) {
        e = s_rl[r];
        for (int s2 = 0; s2 < s; ++s2) e = add4(e, s_segrs[(std::size_t(buf) * p.RH + r) * p.B + s2]);
      }
      run = add4(run, e);
      v[i] = run;
    }
    base = add4(base, warp_exclusive_sum4(run));
#pragma unroll
    for (int i = 0; i < 5; ++i) {
      const int r = q * lane + i;
      if (i < q && r < nrows) s_lrow[(std::size_t(buf) * p.B + s) * p.RH + r] = add4(base, v[i]);
    }
  }
  __syncwarp();
  return rchunk;
}

__global__ void __launch_bounds__(MAX_THREADS, 1) sat_chunks(const __grid_constant__ params p) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int b = blockIdx.x, I = b / p.Gx, J = b % p.Gx;
  const int w = p.B * SW, xa = J * w, K = p.K;
  const layout L(p.B, p.RH, p.NG, p.NU, K);
  std::uint32_t* s_img = reinterpret_cast<std::uint32_t*>(smem + L.img);
  uint4* s_kcol = reinterpret_cast<uint4*>(smem + L.kcol);
  uint4* s_lrow = reinterpret_cast<uint4*>(smem + L.lrow);
  uint2* s_ucs = reinterpret_cast<uint2*>(smem + L.ucs);
  uint4* s_segrs = reinterpret_cast<uint4*>(smem + L.segrs);
  uint4* s_ccarry = reinterpret_cast<uint4*>(smem + L.ccarry);
  counters* ctr = reinterpret_cast<counters*>(smem + L.ctr);
  unsigned long long* s_mbar = reinterpret_cast<unsigned long long*>(smem + L.mbar);
  if (threadIdx.x == 0) {
    for (int i = 0; i < 4; ++i) ctr->walked[i] = 0;
    ctr->carries = 0;
    for (int i = 0; i < K * p.NU; ++i) mbarrier_init_only(s_mbar + i, 1);
    mbarrier_init_visible();
    if (p.stamps) p.stamps[stamp_index(b, 3, 0, NSTAMP, MAX_CHUNKS)] = global_ns();
  }
  for (int i = threadIdx.x; i < w; i += blockDim.x) s_ccarry[i] = make_uint4(0, 0, 0, 0);
  __syncthreads();
  const std::size_t img_buf = std::size_t(p.RH) * w;  // words a buffer
  // unit u of every chunk: 128 px (strip s = u % B) x UR rows (group g = u / B) of the region;
  // aggregator warp u sums it, walker warp NU + u walks it and then requests the same unit of
  // chunk c + K into the slot it has just walked (its only other reader, aggregator u, is done).
  const int u = warp < p.NU ? warp : warp - p.NU;
  const int s = u % p.B, g = u / p.B;
#define unit_rows(c, ya, y1, y2)                  \
  do {                                            \
    ya = piece_row((c), I, p);                    \
    const int yb_ = piece_row((c), I + 1, p);     \
    y1 = ya + g * p.UR;                           \
    y2 = min(y1 + p.UR, yb_);                     \
  } while (0)

  if (warp < p.NU) {
    // ---- aggregator: sums of unit u, then (all aggregators) the exchange ----
    unsigned uses[4] = {0, 0, 0, 0};        // completed phases of this unit's barrier, per buffer
    uint4 rchunk = make_uint4(0, 0, 0, 0);  // (warp 0) table value left of the region column, above the chunk
    for (int c = 0; c < p.NC; ++c) {
      const int buf = c % K;
      int ya, y1, y2;
      unit_rows(c, ya, y1, y2);
      if (c >= K) wait_at_least(&ctr->walked[buf], unsigned(p.NU) * unsigned((c - K) / K + 1), lane);  // chunk c - K walked
      if (y1 < y2) {
#pragma unroll
        for (int k = 0; k < 4; ++k)
          if (k == buf) {
            mbarrier_wait(s_mbar + buf * p.NU + u, uses[k] & 1u);
            ++uses[k];
          }
        const std::uint32_t* src = s_img + buf * img_buf;
        strip_sums sum;  // (UR <= 256 rows: column sums fit the 16-bit pairs)
        for (int y = y1; y < y2; ++y) {
          const uint4 rs = sum.add_row(*reinterpret_cast<const uint4*>(src + std::size_t(y - ya) * w + s * SW + 4 * lane), y - y1, lane);
          if (lane == 0) s_segrs[(std::size_t(buf) * p.RH + (y - ya)) * p.B + s] = rs;
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) s_ucs[(std::size_t(buf) * p.NG + g) * w + s * SW + 4 * lane + k] = make_uint2(sum.cRB[k], sum.cGA[k]);
      }
      rchunk = exchange(p, c, warp, lane, rchunk);
      if (warp == 0 && lane == 0) stamp(p, 0, c, b);
      signal(&ctr->carries, lane);  // NU signals a chunk
    }
  } else if (warp < 2 * p.NU) {
    // ---- walker of unit u ----
    const std::uint64_t pol = policy_evict_first();
    uint4* stg = reinterpret_cast<uint4*>(smem + L.stage) + u * 128;
    auto request = [&](int c) {  // unit u of chunk c into its slot (lane 0)
      int ya, y1, y2;
      unit_rows(c, ya, y1, y2);
      if (lane == 0 && y1 < y2) {
        unsigned long long* m = s_mbar + (c % K) * p.NU + u;
        std::uint32_t* dst = s_img + (c % K) * img_buf;
        mbarrier_arrive_expect_bytes(m, unsigned(y2 - y1) * SW * 4);
        for (int y = y1; y < y2; ++y) bulk_copy_to_shared<true>(dst + std::size_t(y - ya) * w + s * SW, p.img + std::size_t(y) * p.W + xa + s * SW, SW * 4, m, pol);
      }
    };
    request(0);
    if (p.S && p.NC > 1) {
      int ya, y1, y2;
      unit_rows(0, ya, y1, y2);
      if (y1 < y2) mbarrier_wait(s_mbar + u, 0);
    }
    for (int c = 1; c < min(K, p.NC); ++c) request(c);
    for (int c = 0; c < p.NC; ++c) {
      wait_at_least(&ctr->carries, unsigned(p.NU) * unsigned(c + 1), lane);
      const int buf = c % K;
      int ya, y1, y2;
      unit_rows(c, ya, y1, y2);
      if (y1 < y2) {
        const std::uint32_t* src = s_img + buf * img_buf;
        const int x0 = s * SW + 4 * lane;
        uint4 P[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) P[k] = s_kcol[buf * w + x0 + k];
        for (int gg = 0; gg < g; ++gg)
#pragma unroll
          for (int k = 0; k < 4; ++k) P[k] = add4(P[k], rgba_of_pairs(s_ucs[(std::size_t(buf) * p.NG + gg) * w + x0 + k]));
        // P = row scan over the unit of the column sums above its first row
#pragma unroll
        for (int k = 1; k < 4; ++k) P[k] = add4(P[k], P[k - 1]);
        const uint4 excl = warp_exclusive_sum4(P[3]);
#pragma unroll
        for (int k = 0; k < 4; ++k) P[k] = add4(P[k], excl);
        const uint4* lrow = s_lrow + (std::size_t(buf) * p.B + s) * p.RH;
        uint4* dst = p.tab + xa + s * SW;
        for (int y = y1; y < y2; ++y) {
          const uint4 px = *reinterpret_cast<const uint4*>(src + std::size_t(y - ya) * w + x0);
          std::uint32_t pRB[4], pGA[4], xRB, xGA;
          row_scan_rgba8(px, lane, pRB, pGA, xRB, xGA);
          const uint4 left = lrow[y - ya];
          uint4 out[4];
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            P[k] = add4(P[k], rgba_of_pairs(pRB[k] + xRB, pGA[k] + xGA));
            out[k] = add4(P[k], left);
          }
          canopy::detail::sat::stage_segment(stg, out, lane);
          __syncwarp();
          if (p.mode < 2) canopy::detail::sat::store_staged_row<4>(dst + std::size_t(y) * p.W, stg, 128, lane);
          __syncwarp();
        }
      }
      signal(&ctr->walked[buf], lane);
      if (c + K < p.NC) request(c + K);
      if (lane == 0) stamp(p, 1, c, b);
    }
  }
#undef unit_rows
}

struct config {
  int B, Gy, RH, UR, F, K, S;  // F: rows a region in chunk 0 (0: chunks of even size); K buffers; S stagger
};

std::vector<config> parse_configs(const std::string& s, const char* program) {
  std::vector<config> out;
  for (const std::string& one : config_items(s)) {
    config c{0, 0, 0, 0, 0, 2, 0};
    if (std::sscanf(one.c_str(), "%d:%d:%d:%d:%d:%d:%d", &c.B, &c.Gy, &c.RH, &c.UR, &c.F, &c.K, &c.S) < 4 || c.F < 0 || c.F > c.RH ||
        c.K < 2 || c.K > 4 || c.S < 0 || c.S > 1 || c.B < 1 || c.B > 2 || c.Gy < 1 ||
        c.RH < 1 || c.RH > 160 || c.UR < 1 || c.UR > 256 || c.B * ((c.RH + c.UR - 1) / c.UR) > MAX_UNITS) {
      std::printf("%s: bad config '%s' (B:Gy:RH:UR[:F[:K[:S]]], F <= RH, K 2..4, S 0..1, B <= 2 (16-bit row sums), RH <= 160, B * ceil(RH / UR) <= %d)\n", program, one.c_str(), MAX_UNITS);
      std::exit(canopy_bench::exit_bad_command_line);
    }
    out.push_back(c);
  }
  return out;
}

struct runner {
  const std::uint32_t* img;
  uint4* tab;
  int W, H, sms = 0;
  unsigned epoch = 0;
  uint4 *RS = nullptr, *CS = nullptr, *T = nullptr;
  u64* stamps = nullptr;
  runner(const std::uint32_t* i, uint4* t, int w, int h) : img(i), tab(t), W(w), H(h) {
    int dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const std::size_t G = std::size_t(sms);
    CK(cudaMalloc(&RS, MAX_CHUNKS * G * 160 * 16));
    CK(cudaMalloc(&CS, MAX_CHUNKS * G * 2 * SW * 16));
    CK(cudaMalloc(&T, MAX_CHUNKS * G * 32));
    CK(cudaMemset(RS, 0, MAX_CHUNKS * G * 160 * 16));  // tags 0: never a build's (seq >= MAX_CHUNKS + 1)
    CK(cudaMemset(CS, 0, MAX_CHUNKS * G * 2 * SW * 16));
    CK(cudaMemset(T, 0, MAX_CHUNKS * G * 32));
    CK(cudaMalloc(&stamps, G * NSTAMP * MAX_CHUNKS * 8));
    CK(cudaFuncSetAttribute(sat_chunks, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  }
  ~runner() {
    cudaFree(RS);
    cudaFree(CS);
    cudaFree(T);
    cudaFree(stamps);
  }
  //! The launch parameters of `c` for this image; false (with a reason) if it cannot run.
  bool plan(config c, params& p, std::size_t& smem, std::string& why) const {
    const int TW = W / SW;
    if (W % SW) {
      why = "width not a multiple of 128";
      return false;
    }
    int B = std::min(c.B, TW);
    while (TW % B) --B;
    p = params{};
    p.img = img;
    p.tab = tab;
    p.W = W;
    p.H = H;
    p.B = B;
    p.Gx = TW / B;
    p.Gy = c.Gy;
    p.RH = c.RH;
    p.UR = c.UR;
    if (c.F > 0) {
      p.R0 = std::min(H, c.F * p.Gy);
      p.NC = 1 + (H - p.R0 + p.Gy * p.RH - 1) / (p.Gy * p.RH);
    } else {
      p.NC = (H + p.Gy * p.RH - 1) / (p.Gy * p.RH);
      p.R0 = H / p.NC;
    }
    p.NG = (p.RH + p.UR - 1) / p.UR;
    p.NU = B * p.NG;
    p.RS = RS;
    p.CS = CS;
    p.T = T;
    p.K = c.K;
    p.S = c.S;
    smem = layout(B, p.RH, p.NG, p.NU, p.K).total;
    if (p.Gx * p.Gy > sms) {
      why = std::to_string(p.Gx * p.Gy) + " blocks for " + std::to_string(sms) + " SMs";
      return false;
    }
    if (p.NC > MAX_CHUNKS - 1) {
      why = std::to_string(p.NC) + " chunks";
      return false;
    }
    if (smem > 227 * 1024) {
      why = std::to_string(smem) + " bytes of shared memory";
      return false;
    }
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sat_chunks, 2 * p.NU * 32, smem));
    if (per_sm < 1) {
      why = "no block fits an SM";
      return false;
    }
    return true;
  }
  //! One build with a plan() that succeeded (a new epoch: a new tag sequence).
  void launch(params p, std::size_t smem, int mode, bool stamped = false) {
    ++epoch;
    p.seq0 = epoch * MAX_CHUNKS;
    p.mode = mode;
    p.stamps = stamped ? stamps : nullptr;
    void* args[] = {&p};
    CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(sat_chunks), dim3(p.Gx * p.Gy), dim3(2 * p.NU * 32), args, smem, nullptr));
  }
};

}  // namespace chunks

int main(int argc, char** argv) {
  using namespace chunks;
  const char* program = "canopy-sat-chunks";
  return run_prototype(argc, argv, program, "B:Gy:RH:UR[:F[:K[:S]]]", "2:8:72:16:0:2:0,2:8:48:16:0:3:0,1:4:96:16:0:3:0",
                       "2:4:72:16:0:2:0,2:4:48:16:0:3:0", "",
                       {{128, 1}, {256, 33}, {1024, 100}, {640, 47}, {2048, 300}, {384, 1000}, {3840, 2160}, {7680, 4320}}, parse_configs,
                       [&](test_image& ti, bool timed, const std::vector<config>& configs, bool& all_ok) {
    const int w = ti.w, h = ti.h;
    const std::size_t npx = ti.npx;
    std::uint32_t* dimg = ti.dimg;
    uint4* dtab = ti.dtab;
    const double bytes = ti.bytes, copy_gbps = ti.copy_gbps;
    runner run(dimg, dtab, w, h);
    for (const config& c : configs) {
      params p;
      std::size_t smem;
      std::string why;
      const std::string cname = std::to_string(c.B) + ":" + std::to_string(c.Gy) + ":" + std::to_string(c.RH) + ":" + std::to_string(c.UR) + ":" + std::to_string(c.F) + ":" + std::to_string(c.K) + ":" + std::to_string(c.S);
      if (!run.plan(c, p, smem, why)) {
        std::printf("  %dx%d %s: not run (%s)\n", w, h, cname.c_str(), why.c_str());
        continue;
      }
      for (int mode = 0; mode < (timed ? 4 : 1); ++mode) {
        const char* names[] = {"exact", "local", "exact-nostore", "local-nostore"};
        const char* name = names[mode];
        auto check = [&](const char* when) {
          if (mode == 0) return ti.table_exact(std::string(name) + " " + cname, when, all_ok);
          CK(cudaGetLastError());  // diagnostics: tables wrong by design
          CK(cudaDeviceSynchronize());
          return true;
        };
        CK(cudaMemset(dtab, 0xAB, npx * 16));
        run.launch(p, smem, mode);
        const bool ok1 = check("on its first build");
        if (!timed) {
          if (ok1) std::printf("  %dx%d%s %s %s (B %d, %dx%d blocks, %d chunks): exact\n", w, h, ti.label(), name, cname.c_str(), p.B, p.Gx, p.Gy, p.NC);
          continue;
        }
        const double t = timed_us([&] { run.launch(p, smem, mode); });
        const bool ok2 = check("after the timed builds");
        run.launch(p, smem, mode, true);
        const int G = p.Gx * p.Gy;
        const stamp_table st(run.stamps, G, NSTAMP, MAX_CHUNKS);
        auto at = [&](int blk, int which, int ch) { return st.at(blk, which, ch); };
        const double t0 = st.earliest(3, 0);
        double carries0 = 0, agg0 = 0, last_walk = 0, wait = 0, exch = 0, prep = 0, skew = 0, vis = 0, tail = 0;
        for (int blk = 0; blk < G; ++blk) {
          carries0 += at(blk, 0, 0) - t0;
          agg0 += at(blk, 2, 0) - t0;
          last_walk = std::max(last_walk, at(blk, 1, p.NC - 1) - t0);
          for (int ch = 1; ch < p.NC; ++ch) wait += std::max(0.0, at(blk, 0, ch) - at(blk, 1, ch - 1));
          const int bi = blk / p.Gx, bj = blk % p.Gx;
          for (int ch = 0; ch < p.NC; ++ch) {
            exch += at(blk, 0, ch) - at(blk, 2, ch);
            const double own = at(blk, 4, ch);
            double dep = own;  // the last publication this block's reads wait for
            if (mode == 0 || mode == 2)
              for (int o = 0; o < G; ++o)
                if ((o / p.Gx == bi && o % p.Gx < bj) || o % p.Gx == bj || o % p.Gx < bj) dep = std::max(dep, at(o, 4, ch));
            prep += own - at(blk, 2, ch);
            skew += dep - own;
            vis += std::max(at(blk, 5, ch), at(blk, 6, ch)) - dep;
            tail += at(blk, 0, ch) - std::max(at(blk, 5, ch), at(blk, 6, ch));
          }
        }
        const double per = 1e-3 / (double(G) * p.NC);
        std::printf("  %-13s exchange a chunk (us): publish %.2f, wait for the last dependency's %.2f, reads after it %.2f, carries after the reads %.2f\n", name,
                    prep * per, skew * per, vis * per, tail * per);
        std::printf("  %-5s B:Gy:RH:UR:F:K:S %s (B %d, %dx%d blocks, %d chunks, %zu B smem): %.1f us = %.1f%% of copy (%s) | chunk 0 summed at %.1f us, carries at %.1f us, "
                    "last walk ends %.1f us, walkers wait for carries %.2f us a chunk, exchange %.2f us a chunk\n",
                    name, cname.c_str(), p.B, p.Gx, p.Gy, p.NC, smem, t, 100.0 * bytes / t * 1e-3 / copy_gbps,
                    mode ? "not checked" : (ok1 && ok2 ? "exact" : "WRONG"), agg0 / G * 1e-3, carries0 / G * 1e-3, last_walk * 1e-3,
                    p.NC > 1 ? wait / G / (p.NC - 1) * 1e-3 : 0.0, exch / G / p.NC * 1e-3);
      }
    }
  });
}
