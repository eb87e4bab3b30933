// canopy-sat-strips: a measuring prototype (not the library's kernel; CUDA builds only, not run by
// CTest) of a SAT for RGBA8 -> u32 in which no column carry ever leaves its SM and no tile waits on
// a dependent L2 read before its stores (docs/sat.md, "Strip walkers", session 16).
//
// - Each block owns one 32-px strip (lane = pixel) and walks down it a 32-row band at a time, with
//   producer, relay and walker warps over a ring of band slots (the roles: above walk_strips). A
//   band's column carry passes from walker to walker through shared memory, and only an add sits
//   between a walker's wait and its hand-over.
// - The row carries of a band (the sums of each row left of the strip) are a prefix over strips of
//   the band's row sums, in two levels:
//     * within a thread-block cluster of C strips, through distributed shared memory: each block
//       publishes its 32 row sums in its ring slot, and block k reads those of blocks < k;
//     * across clusters, through global memory: the last block of each cluster publishes the
//       cluster's totals; block j of a later cluster sums the totals of clusters j, j + C, ...
//       below it (one round of loads, no chain) into its slot, and every block of the cluster adds
//       up those partial sums of all its blocks.
//   Every exchanged word is {value, tag} in 64 bits (tag = band + 1 in shared memory, the build's
//   epoch in global memory), so readers spin on tags and nothing needs a fence. Ring slots are
//   reused once their remote readers have counted themselves done (remote red.add).
// - Every wait points at an earlier band, or at an earlier stage of the same band (row sums, then
//   cluster totals, then partial sums, then walks), so nothing deadlocks once all clusters are
//   resident (the grid is checked against cudaOccupancyMaxActiveClusters).
// Modes: "cluster" (the above) and "given" (the row carries read from an array the host computed:
// the ceiling of the walker structure without the exchange). Tables are checked exactly against a
// CPU reference; timings are canopy_bench::median_ms_on_stream medians against a device-to-device
// copy of a table-sized buffer measured in the same run. Exits 1 if a table is wrong.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "sat_proto_common.cuh"

using namespace sat_proto;
#define CK SAT_PROTO_CHECK

namespace strips {

constexpr int SP = 32;    // strip width (px); lane = pixel
constexpr int BH = 32;    // band rows
constexpr int PAD = 33;   // words per shared row: conflict-free by row and by column
constexpr int MAXC = 16;  // cluster size at most
constexpr unsigned M8 = 0x00FF00FFu;

using u64 = unsigned long long;

struct params {
  const std::uint32_t* img;
  uint4* tab;
  int w, h, S, NB, C, ncl;
  unsigned epoch;
  u64* tot;            // [ncl][NB][32 rows][4 channels] tagged cluster totals
  const uint4* given;  // mode 1: [NB * 32 rows][S] row carries
  u64* stamps;         // optional: per-phase clock sums
};

__device__ __forceinline__ unsigned map_rank(unsigned a, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ u64 tagged(unsigned v, unsigned tag) { return (u64(tag) << 32) | v; }
__device__ __forceinline__ bool tags_are(u64 a, u64 b, u64 c, u64 d, unsigned tag) {
  return unsigned(a >> 32) == tag && unsigned(b >> 32) == tag && unsigned(c >> 32) == tag && unsigned(d >> 32) == tag;
}
//! Four tagged words {v.c, tag} into this block's shared memory (each 64-bit element single-copy atomic).
__device__ __forceinline__ void put4_local(u64* p, uint4 v, unsigned tag) {
  const unsigned a = shared_address(p);
  asm volatile("st.relaxed.cluster.shared::cta.v2.u64 [%0], {%1, %2};" ::"r"(a), "l"(tagged(v.x, tag)), "l"(tagged(v.y, tag)) : "memory");
  asm volatile("st.relaxed.cluster.shared::cta.v2.u64 [%0+16], {%1, %2};" ::"r"(a), "l"(tagged(v.z, tag)), "l"(tagged(v.w, tag)) : "memory");
}
//! Four tagged words from a shared::cluster address; true if all carry `tag`.
__device__ __forceinline__ bool get4_cluster(unsigned ra, unsigned tag, uint4& v) {
  u64 a, b, c, d;
  asm volatile("ld.relaxed.cluster.shared::cluster.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "r"(ra) : "memory");
  asm volatile("ld.relaxed.cluster.shared::cluster.v2.u64 {%0, %1}, [%2+16];" : "=l"(c), "=l"(d) : "r"(ra) : "memory");
  v = make_uint4(unsigned(a), unsigned(b), unsigned(c), unsigned(d));
  return tags_are(a, b, c, d, tag);
}
__device__ __forceinline__ void put4_global(u64* p, uint4 v, unsigned tag) {
  asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(tagged(v.x, tag)), "l"(tagged(v.y, tag)) : "memory");
  asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p + 2), "l"(tagged(v.z, tag)), "l"(tagged(v.w, tag)) : "memory");
}
__device__ __forceinline__ bool get4_global(const u64* p, unsigned tag, uint4& v) {
  u64 a, b, c, d;
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(c), "=l"(d) : "l"(p + 2) : "memory");
  v = make_uint4(unsigned(a), unsigned(b), unsigned(c), unsigned(d));
  return tags_are(a, b, c, d, tag);
}
__device__ __forceinline__ unsigned load_count(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.cluster.shared::cta.u32 %0, [%1];" : "=r"(v) : "r"(shared_address(p)) : "memory");
  return v;
}
//! Counts one reader done with block `rank`'s slot (its counter at local address `a`).
__device__ __forceinline__ void count_done(unsigned a, unsigned rank) {
  asm volatile("red.relaxed.cluster.shared::cluster.add.u32 [%0], 1;" ::"r"(map_rank(a, rank)) : "memory");
}
//! Waits (lane 0 polls, the warp follows) until a slot counter reaches `need`.
__device__ __forceinline__ void wait_count(const unsigned* p, unsigned need, int lane) {
  if (lane == 0)
    while (load_count(p) < need) __nanosleep(32);
  __syncwarp();
}

// Block roles (warps in this order): P producers (band b of the strip when b % P == the warp),
// Q walkers (b % Q), NR relays (b % NR). A band passes through one of K ring slots in shared
// memory, each holding the band's pixels by row, its column adds, its row sums (`agg`, tagged
// b + 1, read by other blocks) and the sum of lower clusters' totals that this block gathered
// (`xp`, tagged b + 1). Producers never wait on another block; relays do, up to K bands ahead:
//   producer: waits for the slot (its walker done, every remote reader of its row sums done),
//             copies the band's pixels there (cp.async), publishes the row sums, stores the
//             column adds, marks the slot loaded;
//   relay:    in the last block of a full cluster below the last, the cluster's totals of the band
//             (every block's row sums, remote reads) into global memory (tag = epoch); in clusters
//             above the first, xp = the totals of clusters j, j + C, ... below this one (one round
//             of global loads), into the slot;
//   walker:   waits for the slot to be loaded; row carries = the row sums of blocks 0..j-1 of the
//             cluster plus the xp of all its blocks (remote reads, one round each); takes the
//             column carry from the band above and hands on the one for the band below, scans each
//             row across the warp and writes the table rows (512 contiguous bytes a store), frees
//             the slot.
// Producers and relays run up to K bands ahead of the walkers, so the remote waits stay off the
// walkers' path.
struct __align__(16) fixed_shared {
  u64 col[32][4];  // the column carry handed from band to band (tag = the band that reads it + 1)
  unsigned seq[64], agg_done[64], xp_done[64];
};
constexpr std::size_t pix_bytes = BH * PAD * 4;
constexpr std::size_t slot_bytes = pix_bytes + 32 * 16 + 2 * 32 * 32 + 32 * 16;  // pixels, column adds, agg, xp, row carries
struct slot_view {
  std::uint32_t* pix;
  uint4* cadd;
  u64* agg;    // [32 rows][4]
  u64* xp;     // [32 rows][4]
  uint4* rcs;  // [32 rows]
  __device__ slot_view(unsigned char* dyn, int s) {
    unsigned char* base = dyn + std::size_t(s) * slot_bytes;
    pix = reinterpret_cast<std::uint32_t*>(base);
    cadd = reinterpret_cast<uint4*>(base + pix_bytes);
    agg = reinterpret_cast<u64*>(base + pix_bytes + 512);
    xp = agg + 32 * 4;
    rcs = reinterpret_cast<uint4*>(xp + 32 * 4);
  }
};

//! Sum over blocks k0..k1-1 of the cluster of the four tagged words at local address `a` in each,
//! waiting for `tag` (N blocks' loads in flight); counts itself done at `done` in each.
template <int N>
__device__ __forceinline__ uint4 sum_cluster(unsigned a, unsigned done, int k0, int k1, unsigned tag, int lane) {
  uint4 s = make_uint4(0, 0, 0, 0);
  for (int k = k0; k < k1; k += N) {
    uint4 v[N];
    bool ok[N];
#pragma unroll
    for (int u = 0; u < N; ++u) {
      v[u] = make_uint4(0, 0, 0, 0);
      ok[u] = k + u >= k1 || get4_cluster(map_rank(a, unsigned(k + u)), tag, v[u]);
    }
#pragma unroll
    for (int u = 0; u < N; ++u) {
      while (!ok[u]) {
        __nanosleep(100);  // spinning warps would take issue slots and DSMEM bandwidth from the walkers
        ok[u] = get4_cluster(map_rank(a, unsigned(k + u)), tag, v[u]);
      }
      s = add4(s, v[u]);
    }
  }
  __syncwarp();
  if (lane >= k0 && lane < k1) count_done(done, unsigned(lane));
  return s;
}
//! Sum of the totals of clusters c0, c0 + step, ... below n for band b, row `lane` (4 in flight).
__device__ __forceinline__ uint4 sum_totals_strided(const params& p, int c0, int step, int n, int b, int lane) {
  auto total = [&](int c) { return p.tot + ((std::size_t(c) * p.NB + b) * 32 + lane) * 4; };
  uint4 s = make_uint4(0, 0, 0, 0);
  for (int c = c0; c < n; c += 4 * step) {
    uint4 v[4];
    bool ok[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      v[u] = make_uint4(0, 0, 0, 0);
      ok[u] = c + u * step >= n || get4_global(total(c + u * step), p.epoch, v[u]);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      while (!ok[u]) {
        __nanosleep(64);
        ok[u] = get4_global(total(c + u * step), p.epoch, v[u]);
      }
      s = add4(s, v[u]);
    }
  }
  return s;
}
__device__ __forceinline__ void seq_wait(const volatile unsigned* p, unsigned v, int lane) {
  if (lane == 0)
    while (*p != v) __nanosleep(64);
  __syncwarp();
}
__device__ __forceinline__ void seq_set(volatile unsigned* p, unsigned v, int lane) {
  __syncwarp();
  if (lane == 0) {
    __threadfence_block();
    *p = v;
  }
}

//! Adds a warp's per-phase clock sums st[0..n) at stamps[first..) and its band count at
//! stamps[count_at] (lane 0 only).
__device__ __forceinline__ void add_stamps(u64* stamps, int first, const long long (&st)[4], int n, int count_at, int bands, int lane) {
  if (lane != 0) return;
  for (int i = 0; i < n; ++i) atomicAdd(stamps + first + i, (u64)st[i]);
  atomicAdd(stamps + count_at, (u64)bands);
}

// Stamps (clock64 sums over all warps): 0 producer's wait for a free slot, 1 the band's copy and
// sums, 2 relay's totals, 3 relay's xp, 4 walker's wait for the pixels, 5 its row carries (remote
// reads), 6 column chain, 7 walk; 8 producer bands, 9 relay bands, 10 walker bands.
template <int MODE, bool STAMPS>
__global__ void __launch_bounds__(640, 1) walk_strips(params p, int P, int Q, int K) {
  extern __shared__ __align__(16) unsigned char dyn[];
  __shared__ fixed_shared sh;
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, NW = blockDim.x >> 5, NR = NW - P - Q;
  unsigned rank, cid;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
  for (int i = threadIdx.x; i < K * 32 * 8; i += blockDim.x) {  // agg and xp words: no tag yet
    const slot_view v(dyn, i / 256);
    v.agg[i % 256] = 0;
  }
  for (int i = threadIdx.x; i < 32 * 4; i += blockDim.x) (&sh.col[0][0])[i] = tagged(0, 1);
  for (int i = threadIdx.x; i < 64; i += blockDim.x) sh.seq[i] = sh.agg_done[i] = sh.xp_done[i] = 0;
  __syncthreads();
  cluster_sync_all();  // every block's slots are initialised before any remote read

  const int strip = int(cid) * p.C + int(rank);
  long long st[4] = {0, 0, 0, 0};
  if (strip < p.S) {
    const int nreal = min(p.C, p.S - int(cid) * p.C);
    const bool totaler = MODE == 0 && int(rank) == p.C - 1 && int(cid) + 1 < p.ncl;
    // Remote readers of a slot's row sums: walkers of the blocks above this one, and the totaler.
    const unsigned agg_readers = MODE == 0 ? unsigned(nreal - 1 - int(rank)) + (int(cid) + 1 < p.ncl ? 1u : 0u) : 0u;
    const int x = strip * SP + lane;
    if (wid < P) {
      // ---------------- producer ----------------
      for (int b = wid; b < p.NB; b += P) {
        const long long t0 = STAMPS ? clock64() : 0;
        const int s = b % K, y0 = b * BH, rows = min(BH, p.h - y0);
        const unsigned n = unsigned(b / K);
        const slot_view v(dyn, s);
        seq_wait(&sh.seq[s], 2u * n, lane);
        if (b >= K) wait_count(&sh.agg_done[s], n * agg_readers, lane);
        const long long t1 = STAMPS ? clock64() : 0;
        {  // the band's pixels into the slot by row (rows below the image zero-filled)
          const unsigned dst = shared_address(v.pix) + unsigned(lane) * 4;
          const std::uint32_t* src = p.img + std::size_t(y0) * p.w + x;
#pragma unroll
          for (int r = 0; r < BH; ++r)
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst + unsigned(r * PAD * 4)),
                         "l"(r < rows ? src + std::size_t(r) * p.w : p.img), "r"(r < rows ? 4 : 0)
                         : "memory");
          asm volatile("cp.async.commit_group;\n\tcp.async.wait_group 0;" ::: "memory");
        }
        __syncwarp();
        std::uint32_t crb = 0, cga = 0, rrb = 0, rga = 0;
#pragma unroll 8
        for (int i = 0; i < BH; ++i) {
          const std::uint32_t u = v.pix[i * PAD + lane], w = v.pix[lane * PAD + i];  // column `lane`, row `lane`
          crb += u & M8;
          cga += (u >> 8) & M8;
          rrb += w & M8;
          rga += (w >> 8) & M8;
        }
        if (MODE == 0) put4_local(v.agg + lane * 4, rgba_of_pairs(rrb, rga), unsigned(b) + 1);
        v.cadd[lane] = warp_inclusive_sum4(rgba_of_pairs(crb, cga));  // the band's prefixes summed down column `lane`
        seq_set(&sh.seq[s], 2u * n + 1, lane);
        if (STAMPS) {
          st[0] += t1 - t0;
          st[1] += clock64() - t1;
        }
      }
      if (STAMPS) add_stamps(p.stamps, 0, st, 2, 8, (p.NB - wid + P - 1) / P, lane);
    } else if (wid < P + Q) {
      // ---------------- walker ----------------
      const int q = wid - P;
      for (int b = q; b < p.NB; b += Q) {
        const long long t0 = STAMPS ? clock64() : 0;
        const int s = b % K, y0 = b * BH, rows = min(BH, p.h - y0);
        const unsigned n = unsigned(b / K), tag = unsigned(b) + 1;
        const slot_view v(dyn, s);
        seq_wait(&sh.seq[s], 2u * n + 1, lane);
        const long long t1 = STAMPS ? clock64() : 0;
        uint4 rc;  // row `lane`'s carry
        if (MODE == 1) {
          rc = p.given[std::size_t(y0 + lane) * p.S + strip];
        } else {  // the row sums of the blocks to the left in the cluster, and every block's xp
          rc = sum_cluster<8>(shared_address(v.agg + lane * 4), shared_address(&sh.agg_done[s]), 0, int(rank), tag, lane);
          if (cid > 0) rc = add4(rc, sum_cluster<8>(shared_address(v.xp + lane * 4), shared_address(&sh.xp_done[s]), 0, nreal, tag, lane));
        }
        v.rcs[lane] = rc;  // for the row loop, which reads row r's carry by broadcast
        const uint4 cadd = add4(v.cadd[lane], warp_sum4(rc));  // the band's addition to column `lane`'s carry
        __syncwarp();
        const long long t2 = STAMPS ? clock64() : 0;
        uint4 colin;
        {
          const unsigned a = map_rank(shared_address(&sh.col[lane][0]), rank);
          while (!get4_cluster(a, tag, colin)) __nanosleep(32);
          put4_local(&sh.col[lane][0], add4(colin, cadd), tag + 1);
        }
        __syncwarp();
        const long long t3 = STAMPS ? clock64() : 0;
        uint4 acc = colin;
        uint4* out = p.tab + std::size_t(y0) * p.w + x;
#pragma unroll 8
        for (int r = 0; r < rows; ++r) {
          const std::uint32_t u = v.pix[r * PAD + lane];
          std::uint32_t rb = u & M8, ga = (u >> 8) & M8;  // row r's prefix at column `lane`, 16-bit pairs
          warp_inclusive_sum2(rb, ga, lane);
          acc = add4(acc, add4(v.rcs[r], rgba_of_pairs(rb, ga)));
          out[std::size_t(r) * p.w] = acc;
        }
        seq_set(&sh.seq[s], 2u * n + 2, lane);
        if (STAMPS) {
          const long long t4 = clock64();
          st[0] += t1 - t0;
          st[1] += t2 - t1;
          st[2] += t3 - t2;
          st[3] += t4 - t3;
        }
      }
      if (STAMPS) add_stamps(p.stamps, 4, st, 4, 10, (p.NB - q + Q - 1) / Q, lane);
    } else if (MODE == 0 && (totaler || cid > 0)) {
      // ---------------- relay ----------------
      const int r0 = wid - P - Q;
      for (int b = r0; b < p.NB; b += NR) {
        const long long t0 = STAMPS ? clock64() : 0;
        const int s = b % K;
        const unsigned n = unsigned(b / K), tag = unsigned(b) + 1;
        const slot_view v(dyn, s);
        if (totaler) {
          const uint4 t = sum_cluster<8>(shared_address(v.agg + lane * 4), shared_address(&sh.agg_done[s]), 0, p.C, tag, lane);
          put4_global(p.tot + ((std::size_t(cid) * p.NB + b) * 32 + lane) * 4, t, p.epoch);  // as sum_totals_strided reads it
        }
        const long long t1 = STAMPS ? clock64() : 0;
        if (cid > 0) {
          const uint4 xs = sum_totals_strided(p, int(rank), p.C, int(cid), b, lane);
          if (b >= K) wait_count(&sh.xp_done[s], n * unsigned(nreal), lane);
          put4_local(v.xp + lane * 4, xs, tag);
        }
        if (STAMPS) {
          st[0] += t1 - t0;
          st[1] += clock64() - t1;
        }
      }
      if (STAMPS) add_stamps(p.stamps, 2, st, 2, 9, (p.NB - r0 + NR - 1) / NR, lane);
    }
  }
  __syncthreads();
  cluster_sync_all();  // no block leaves while another may still read its slots
}

struct config {
  int C = 8, P = 6, Q = 8, R = 4, blocks_per_sm = 1, K = 0;  // K 0: as many slots as fit (at most 64)
};

struct runner {
  int w, h, S, NB;
  const std::uint32_t* img;
  uint4* tab;
  u64* tot = nullptr;
  uint4* given = nullptr;
  u64* stamps = nullptr;
  unsigned epoch = 0;
  runner(const std::uint32_t* img_, uint4* tab_, int w_, int h_, const std::vector<std::uint32_t>& host_img) : w(w_), h(h_), img(img_), tab(tab_) {
    S = w / SP;
    NB = (h + BH - 1) / BH;
    allow_all_slots(walk_strips<0, false>);
    allow_all_slots(walk_strips<0, true>);
    allow_all_slots(walk_strips<1, false>);
    allow_all_slots(walk_strips<1, true>);
    const int max_ncl = S;  // at most one cluster a strip
    CK(cudaMalloc(&tot, std::size_t(max_ncl) * NB * 32 * 4 * 8));
    CK(cudaMemset(tot, 0, std::size_t(max_ncl) * NB * 32 * 4 * 8));
    CK(cudaMalloc(&stamps, 128));
    // The given row carries: sums of each row left of each strip.
    std::vector<uint4> g(std::size_t(NB) * BH * S, make_uint4(0, 0, 0, 0));
    for (int y = 0; y < h; ++y) {
      std::uint32_t acc[4] = {0, 0, 0, 0};
      for (int s = 0; s < S; ++s) {
        g[std::size_t(y) * S + s] = make_uint4(acc[0], acc[1], acc[2], acc[3]);
        for (int x = s * SP; x < (s + 1) * SP; ++x)
          for (int c = 0; c < 4; ++c) acc[c] += (host_img[std::size_t(y) * w + x] >> (8 * c)) & 0xFFu;
      }
    }
    CK(cudaMalloc(&given, g.size() * 16));
    CK(cudaMemcpy(given, g.data(), g.size() * 16, cudaMemcpyHostToDevice));
  }
  ~runner() {
    cudaFree(tot);
    cudaFree(given);
    cudaFree(stamps);
  }
  //! Ring slots for c: as many as fit beside blocks_per_sm - 1 others (228 KB an SM, 1 KB reserved
  //! a block), at most 64; or c.K.
  int slots(const config& c) const {
    const std::size_t per_block = 228 * 1024 / std::size_t(c.blocks_per_sm) - 1024 - sizeof(fixed_shared) - 512;
    const int fit = int(std::min<std::size_t>(per_block, 227 * 1024 - sizeof(fixed_shared)) / slot_bytes);
    return std::min(64, c.K ? std::min(c.K, fit) : fit);
  }
  //! Lets a kernel take the most dynamic shared memory, and clusters above 8 (set once: each
  //! launch asks for its own amount).
  template <class Kernel>
  static void allow_all_slots(Kernel kern) {
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(227 * 1024 - sizeof(fixed_shared))));
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  }
  int clusters(const config& c) const { return (S + c.C - 1) / c.C; }
  //! The launch of configuration c: a cluster of C blocks per C strips, K slots of shared memory.
  cudaLaunchConfig_t launch_config(const config& c, cudaLaunchAttribute* cluster) const {
    cluster->id = cudaLaunchAttributeClusterDimension;
    cluster->val.clusterDim.x = unsigned(c.C);
    cluster->val.clusterDim.y = 1;
    cluster->val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(unsigned(clusters(c) * c.C));
    cfg.blockDim = dim3(unsigned((c.P + c.Q + c.R) * 32));
    cfg.dynamicSmemBytes = std::size_t(slots(c)) * slot_bytes;
    cfg.attrs = cluster;
    cfg.numAttrs = 1;
    return cfg;
  }
  //! Whether every cluster of the grid can be resident at once (else waits could deadlock);
  //! *max_clusters = how many can.
  bool fits(const config& c, int* max_clusters) {
    *max_clusters = 0;
    cudaLaunchAttribute at;
    const cudaLaunchConfig_t cfg = launch_config(c, &at);
    const cudaError_t e = cudaOccupancyMaxActiveClusters(max_clusters, walk_strips<0, false>, &cfg);
    if (e != cudaSuccess) {
      std::printf("    %s\n", cudaGetErrorString(e));
      cudaGetLastError();
      return false;
    }
    return *max_clusters >= clusters(c);
  }
  void launch(const config& c, int mode, bool stamped = false) {
    cudaLaunchAttribute at;
    const cudaLaunchConfig_t cfg = launch_config(c, &at);
    const params p{img, tab, w, h, S, NB, c.C, clusters(c), ++epoch, tot, given, stamps};
    auto kern = mode == 0 ? (stamped ? walk_strips<0, true> : walk_strips<0, false>) : (stamped ? walk_strips<1, true> : walk_strips<1, false>);
    CK(cudaLaunchKernelEx(&cfg, kern, p, c.P, c.Q, slots(c)));
  }
};

std::vector<config> parse_configs(const std::string& s, const char* program) {
  std::vector<config> out;
  for (const std::string& one : config_items(s)) {
    config c;
    if (std::sscanf(one.c_str(), "%d:%d:%d:%d:%d:%d", &c.C, &c.P, &c.Q, &c.R, &c.blocks_per_sm, &c.K) < 4 || c.C < 1 || c.C > MAXC ||
        c.P < 1 || c.Q < 1 || c.R < 1 || c.P + c.Q + c.R > 20 || c.blocks_per_sm < 1 || c.blocks_per_sm > 4 || c.K < 0 || c.K > 64) {
      std::printf("%s: bad configuration '%s' (C:P:Q:R[:B[:K]], C 1..16, P + Q + R <= 20, B 1..4, K 0..64)\n", program, one.c_str());
      std::exit(canopy_bench::exit_bad_command_line);
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace strips

int main(int argc, char** argv) {
  using namespace strips;
  const char* program = "canopy-sat-strips";
  return run_prototype(argc, argv, program, "C:P:Q:R[:B[:K]]", "8:4:8:4:1", "8:3:4:2:2", "",
                       {{128, 1}, {256, 33}, {1024, 100}, {640, 47}, {2048, 300}, {3840, 2160}, {7680, 4320}}, parse_configs,
                       [&](test_image& ti, bool timed, const std::vector<config>& configs, bool& all_ok) {
    const int w = ti.w, h = ti.h;
    const std::size_t npx = ti.npx;
    const std::vector<std::uint32_t>& img = ti.img;
    std::uint32_t* dimg = ti.dimg;
    uint4* dtab = ti.dtab;
    const double bytes = ti.bytes, copy_gbps = ti.copy_gbps;
    runner run(dimg, dtab, w, h, img);
    for (const config& c : configs) {
      int maxcl = 0;
      const std::string cname = std::to_string(c.C) + ":" + std::to_string(c.P) + ":" + std::to_string(c.Q) + ":" + std::to_string(c.R) + ":" +
                                std::to_string(c.blocks_per_sm) + ":" + std::to_string(run.slots(c));
      if (!run.fits(c, &maxcl)) {
        std::printf("  %dx%d %s: %d clusters needed, %d fit at once: not run\n", w, h, cname.c_str(), run.clusters(c), maxcl);
        continue;
      }
      for (int mode = 0; mode < 2; ++mode) {
        const char* name = mode == 0 ? "cluster" : "given";
        auto check = [&](const char* when) { return ti.table_exact(std::string(name) + " " + cname, when, all_ok); };
        CK(cudaMemset(dtab, 0xAB, npx * 16));
        run.launch(c, mode);
        const bool ok1 = check("on its first build");
        if (!timed) {
          if (ok1) std::printf("  %dx%d%s %s %s: exact\n", w, h, ti.label(), name, cname.c_str());
          continue;
        }
        const double t = timed_us([&] { run.launch(c, mode); });
        const bool ok2 = check("after the timed builds");
        CK(cudaMemset(run.stamps, 0, 128));
        run.launch(c, mode, true);
        CK(cudaDeviceSynchronize());
        u64 st[16];
        CK(cudaMemcpy(st, run.stamps, 128, cudaMemcpyDeviceToHost));
        const double pb = double(st[8] ? st[8] : 1), rb = double(st[9] ? st[9] : 1), wb = double(st[10] ? st[10] : 1);
        std::printf("  %-7s C:P:Q:R:B:K %s (%d clusters, %d fit): %.1f us = %.1f%% of copy (%s) | kcycles a band: producer slot wait %.1f, copy+sums %.1f; "
                    "relay totals %.1f, xp %.1f; walker wait for pixels %.1f, row carries %.1f, chain %.1f, walk %.1f\n",
                    name, cname.c_str(), run.clusters(c), maxcl, t, 100.0 * bytes / t * 1e-3 / copy_gbps, ok1 && ok2 ? "exact" : "WRONG",
                    st[0] * 1e-3 / pb, st[1] * 1e-3 / pb, st[2] * 1e-3 / rb, st[3] * 1e-3 / rb, st[4] * 1e-3 / wb, st[5] * 1e-3 / wb,
                    st[6] * 1e-3 / wb, st[7] * 1e-3 / wb);
      }
    }
  });
}
