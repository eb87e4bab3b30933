// canopy-sat-strips: a measuring prototype (not the library's kernel; CUDA builds only, not run by
// CTest) of a SAT for RGBA8 -> u32 in which no column carry ever leaves its SM and no tile waits on
// a dependent L2 read before its stores (docs/sat.md, "Strip walkers", session 16).
//
// - Each block owns one 32-px strip (lane = pixel) and walks down it a 32-row band at a time; its
//   warps take bands in turn. A band's column carry passes from warp to warp through shared memory
//   and only an add sits between a warp's wait and its hand-over.
// - The row carries of a band (the sums of each row left of the strip) are a prefix over strips of
//   the band's row sums, in two levels:
//     * within a thread-block cluster of C strips, through distributed shared memory: each block
//       publishes its 32 row sums in its own ring slot, and block k reads the slots of blocks < k;
//     * across clusters, through global memory: the last block of each cluster publishes the
//       cluster's totals, block 0 of each later cluster sums all earlier clusters' totals (one round
//       of loads, no chain) and publishes that sum in its own slot for the rest of its cluster.
//   Every exchanged word is {value, tag} in 64 bits (tag = band + 1 in shared memory, the build's
//   epoch in global memory), so readers spin on tags and nothing needs a fence. Ring slots are
//   reused once their readers have counted themselves done (remote red.add).
// - Every wait points at an earlier band or at the same band of an earlier cluster, so nothing
//   deadlocks once all clusters are resident (the grid is checked against
//   cudaOccupancyMaxActiveClusters).
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
constexpr int R = 8;      // exchange ring slots
constexpr int PAD = 33;   // words per shared row: conflict-free by row and by column
constexpr int MAXC = 16;  // cluster size at most
constexpr unsigned M8 = 0x00FF00FFu;
constexpr std::size_t warp_bytes = 2 * BH * PAD * 4 + 32 * 16;  // pixels / R|B prefixes, G|A prefixes, row carries

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

struct __align__(16) fixed_shared {
  u64 agg[R][32][4];  // this block's row sums of band b in slot b % R (tag b + 1)
  u64 xc[R][32][4];   // block 0: the sum of earlier clusters' totals (tag b + 1)
  u64 col[32][4];     // the column carry handed from band to band (tag = the band that reads it + 1)
  unsigned agg_done[R], xc_done[R];
};

__device__ __forceinline__ uint4 rgba(std::uint32_t rb, std::uint32_t ga) {
  return make_uint4(rb & 0xFFFFu, ga & 0xFFFFu, rb >> 16, ga >> 16);
}
__device__ __forceinline__ unsigned smem_addr(const void* p) { return unsigned(__cvta_generic_to_shared(p)); }
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
  const unsigned a = smem_addr(p);
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
  asm volatile("ld.relaxed.cluster.shared::cta.u32 %0, [%1];" : "=r"(v) : "r"(smem_addr(p)) : "memory");
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

//! Sum over blocks k0..k1-1 of the cluster of the four tagged words at local address `a` in each,
//! waiting for `tag` (4 blocks' loads in flight at once).
__device__ __forceinline__ uint4 sum_cluster(unsigned a, int k0, int k1, unsigned tag) {
  uint4 s = make_uint4(0, 0, 0, 0);
  for (int k = k0; k < k1; k += 4) {
    uint4 v[4];
    bool ok[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      v[u] = make_uint4(0, 0, 0, 0);
      ok[u] = k + u >= k1 || get4_cluster(map_rank(a, unsigned(k + u)), tag, v[u]);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      while (!ok[u]) ok[u] = get4_cluster(map_rank(a, unsigned(k + u)), tag, v[u]);
      s = add4(s, v[u]);
    }
  }
  return s;
}
//! Sum of clusters 0..n-1's totals of band b, row `lane` (4 clusters' loads in flight at once).
__device__ __forceinline__ uint4 sum_totals(const params& p, int n, int b, int lane) {
  uint4 s = make_uint4(0, 0, 0, 0);
  for (int c = 0; c < n; c += 4) {
    uint4 v[4];
    bool ok[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      v[u] = make_uint4(0, 0, 0, 0);
      ok[u] = c + u >= n || get4_global(p.tot + ((std::size_t(c + u) * p.NB + b) * 32 + lane) * 4, p.epoch, v[u]);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      while (!ok[u]) {
        __nanosleep(64);
        ok[u] = get4_global(p.tot + ((std::size_t(c + u) * p.NB + b) * 32 + lane) * 4, p.epoch, v[u]);
      }
      s = add4(s, v[u]);
    }
  }
  return s;
}
//! Inclusive prefix of v over lanes 0..lane.
__device__ __forceinline__ uint4 warp_scan4(uint4 v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const uint4 y = make_uint4(__shfl_up_sync(~0u, v.x, o), __shfl_up_sync(~0u, v.y, o), __shfl_up_sync(~0u, v.z, o),
                               __shfl_up_sync(~0u, v.w, o));
    if (lane >= o) v = add4(v, y);
  }
  return v;
}

// Stamp slots (sums of clock64 differences over every warp's bands): 0 load + sums, 1 exchange,
// 2 column chain wait, 3 walk, 4 bands.
template <int MODE, bool STAMPS>
__global__ void __launch_bounds__(1024, 1) walk_strips(params p) {
  extern __shared__ __align__(16) unsigned char dyn[];
  __shared__ fixed_shared sh;
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, NW = blockDim.x >> 5;
  unsigned rank, cid;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
  {
    u64* a = &sh.agg[0][0][0];
    u64* x = &sh.xc[0][0][0];
    for (int i = threadIdx.x; i < R * 32 * 4; i += blockDim.x) a[i] = x[i] = 0;
    for (int i = threadIdx.x; i < 32 * 4; i += blockDim.x) (&sh.col[0][0])[i] = tagged(0, 1);
    if (threadIdx.x < R) sh.agg_done[threadIdx.x] = sh.xc_done[threadIdx.x] = 0;
  }
  __syncthreads();
  if (MODE == 0) cluster_sync_all();  // every block's slots are initialised before any remote read

  const int strip = int(cid) * p.C + int(rank);
  if (strip < p.S) {
    std::uint32_t* pix = reinterpret_cast<std::uint32_t*>(dyn + std::size_t(wid) * warp_bytes);
    std::uint32_t* ga = pix + BH * PAD;
    uint4* rcs = reinterpret_cast<uint4*>(ga + BH * PAD);
    const int nreal = min(p.C, p.S - int(cid) * p.C);
    const int x = strip * SP + lane;
    long long st[5] = {0, 0, 0, 0, 0};
    for (int b = wid; b < p.NB; b += NW) {
      long long t0 = STAMPS ? clock64() : 0;
      const int y0 = b * BH, rows = min(BH, p.h - y0);
      // 1. The band's pixels: into shared memory by row, column sums on the way.
      std::uint32_t crb = 0, cga = 0;
      {
        std::uint32_t v[BH];
        const std::uint32_t* src = p.img + std::size_t(y0) * p.w + x;
#pragma unroll
        for (int r = 0; r < BH; ++r) v[r] = r < rows ? __ldcs(src + std::size_t(r) * p.w) : 0u;
#pragma unroll
        for (int r = 0; r < BH; ++r) {
          pix[r * PAD + lane] = v[r];
          crb += v[r] & M8;
          cga += (v[r] >> 8) & M8;
        }
      }
      __syncwarp();
      // 2. Row `lane`'s prefix in place (R|B over the pixels, G|A beside), its sum.
      std::uint32_t rrb = 0, rga = 0;
#pragma unroll 8
      for (int i = 0; i < SP; ++i) {
        const std::uint32_t u = pix[lane * PAD + i];
        rrb += u & M8;
        rga += (u >> 8) & M8;
        pix[lane * PAD + i] = rrb;
        ga[lane * PAD + i] = rga;
      }
      const uint4 rs = rgba(rrb, rga);
      const uint4 cs = warp_scan4(rgba(crb, cga), lane);  // sum of the band's prefixes at column `lane`
      long long t1 = STAMPS ? clock64() : 0;
      // 3. Row `lane`'s carry.
      uint4 rc;
      if (MODE == 1) {
        rc = p.given[std::size_t(y0 + lane) * p.S + strip];
      } else {
        const int s = b % R;
        const unsigned tag = unsigned(b) + 1, rounds = unsigned(b / R);
        if (b >= R) wait_count(&sh.agg_done[s], rounds * unsigned(nreal - 1 - int(rank)), lane);
        put4_local(&sh.agg[s][lane][0], rs, tag);
        uint4 X = make_uint4(0, 0, 0, 0), intra = make_uint4(0, 0, 0, 0);
        if (rank == 0) {
          if (cid > 0) {
            X = sum_totals(p, int(cid), b, lane);
            if (b >= R) wait_count(&sh.xc_done[s], rounds * unsigned(nreal - 1), lane);
            put4_local(&sh.xc[s][lane][0], X, tag);
          }
        } else {
          intra = sum_cluster(smem_addr(&sh.agg[s][lane][0]), 0, int(rank), tag);
          __syncwarp();
          if (lane < int(rank)) count_done(smem_addr(&sh.agg_done[s]), unsigned(lane));
          if (int(rank) == p.C - 1 && int(cid) + 1 < p.ncl)
            put4_global(p.tot + ((std::size_t(cid) * p.NB + b) * 32 + lane) * 4, add4(intra, rs), p.epoch);
          if (cid > 0) {
            X = sum_cluster(smem_addr(&sh.xc[s][lane][0]), 0, 1, tag);
            __syncwarp();
            if (lane == 0) count_done(smem_addr(&sh.xc_done[s]), 0);
          }
        }
        rc = add4(X, intra);
      }
      rcs[lane] = rc;
      const uint4 rct = warp_sum4(rc);
      long long t2 = STAMPS ? clock64() : 0;
      // 4. The column carry from the band above, and this band's for the band below.
      uint4 colin;
      {
        const unsigned a = map_rank(smem_addr(&sh.col[lane][0]), rank);
        while (!get4_cluster(a, unsigned(b) + 1, colin)) {
        }
        put4_local(&sh.col[lane][0], add4(add4(colin, rct), cs), unsigned(b) + 2);
      }
      __syncwarp();
      long long t3 = STAMPS ? clock64() : 0;
      // 5. The table rows: 512 contiguous bytes a store instruction.
      uint4 acc = colin;
      uint4* out = p.tab + std::size_t(y0) * p.w + x;
#pragma unroll 4
      for (int r = 0; r < rows; ++r) {
        acc = add4(acc, add4(rcs[r], rgba(pix[r * PAD + lane], ga[r * PAD + lane])));
        out[std::size_t(r) * p.w] = acc;
      }
      __syncwarp();
      if (STAMPS) {
        const long long t4 = clock64();
        st[0] += t1 - t0;
        st[1] += t2 - t1;
        st[2] += t3 - t2;
        st[3] += t4 - t3;
        st[4] += 1;
      }
    }
    if (STAMPS && lane == 0)
      for (int i = 0; i < 5; ++i) atomicAdd(p.stamps + i, (u64)st[i]);
  }
  __syncthreads();
  if (MODE == 0) cluster_sync_all();  // no block leaves while another may still read its slots
}

struct config {
  int C = 16, warps = 16, blocks_per_sm = 1;
};

struct runner {
  int w, h, S, NB, sms = 0;
  const std::uint32_t* img;
  uint4* tab;
  u64* tot = nullptr;
  uint4* given = nullptr;
  u64* stamps = nullptr;
  unsigned epoch = 0;
  runner(const std::uint32_t* img_, uint4* tab_, int w_, int h_, const std::vector<std::uint32_t>& host_img) : w(w_), h(h_), img(img_), tab(tab_) {
    S = w / SP;
    NB = (h + BH - 1) / BH;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int max_ncl = S;  // at most one cluster a strip
    CK(cudaMalloc(&tot, std::size_t(max_ncl) * NB * 32 * 4 * 8));
    CK(cudaMemset(tot, 0, std::size_t(max_ncl) * NB * 32 * 4 * 8));
    CK(cudaMalloc(&stamps, 64));
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
  template <int MODE, bool STAMPS>
  cudaError_t launch_as(const config& c, bool dry, int* max_clusters) {
    const int ncl = (S + c.C - 1) / c.C;
    const std::size_t need = std::size_t(c.warps) * warp_bytes;
    // Pad the dynamic shared memory so that at most blocks_per_sm blocks fit an SM (228 KB an SM,
    // 1 KB of it reserved per block).
    const std::size_t per_block = 228 * 1024 / std::size_t(c.blocks_per_sm) - 1024 - sizeof(fixed_shared) - 512;
    const std::size_t dyn = std::min<std::size_t>(std::max(need, per_block), 227 * 1024 - sizeof(fixed_shared));
    auto kern = walk_strips<MODE, STAMPS>;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(dyn)));
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(unsigned(ncl * c.C));
    cfg.blockDim = dim3(unsigned(c.warps * 32));
    cfg.dynamicSmemBytes = dyn;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = unsigned(c.C);
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    if (dry) {
      const cudaError_t e = cudaOccupancyMaxActiveClusters(max_clusters, kern, &cfg);
      return e;
    }
    params p{img, tab, w, h, S, NB, c.C, ncl, ++epoch, tot, given, stamps};
    return cudaLaunchKernelEx(&cfg, kern, p);
  }
  //! Whether every cluster of the grid can be resident at once (else waits could deadlock).
  bool fits(const config& c, int* max_clusters) {
    *max_clusters = 0;
    const cudaError_t e = launch_as<0, false>(c, true, max_clusters);
    if (e != cudaSuccess) {
      std::printf("    C=%d W=%d B=%d: %s\n", c.C, c.warps, c.blocks_per_sm, cudaGetErrorString(e));
      cudaGetLastError();
      return false;
    }
    return *max_clusters >= (S + c.C - 1) / c.C;
  }
  void launch(const config& c, int mode, bool stamped = false) {
    int dummy = 0;
    cudaError_t e;
    if (mode == 0) e = stamped ? launch_as<0, true>(c, false, &dummy) : launch_as<0, false>(c, false, &dummy);
    else e = stamped ? launch_as<1, true>(c, false, &dummy) : launch_as<1, false>(c, false, &dummy);
    CK(e);
  }
};

std::vector<config> parse_configs(const std::string& s, const char* program) {
  std::vector<config> out;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    const std::string one = s.substr(i, j - i);
    config c;
    if (std::sscanf(one.c_str(), "%d:%d:%d", &c.C, &c.warps, &c.blocks_per_sm) < 2 || c.C < 1 || c.C > MAXC ||
        c.warps < 1 || c.warps > 32 || c.blocks_per_sm < 1 || c.blocks_per_sm > 4) {
      std::printf("%s: bad configuration '%s' (C:W[:B], C 1..16, W 1..32, B 1..4)\n", program, one.c_str());
      std::exit(canopy_bench::exit_bad_command_line);
    }
    out.push_back(c);
    i = j + 1;
  }
  return out;
}

}  // namespace strips

int main(int argc, char** argv) {
  using namespace strips;
  const char* program = "canopy-sat-strips";
  bool small_only = false;
  std::string c4 = "16:16:1,8:16:1", c8 = "16:8:2,8:8:2";
  try {
    canopy_bench::command_line cl(argc, argv, program);
    while (cl.next()) {
      if (cl.is("--small")) small_only = true;
      else if (cl.is("--configs")) c4 = c8 = cl.value();
      else if (cl.is("--configs-4k")) c4 = cl.value();
      else if (cl.is("--configs-8k")) c8 = cl.value();
      else cl.refuse_unknown();
    }
  } catch (const canopy_bench::bad_flag& e) {
    std::printf("%s\nusage: %s [--small] [--configs C:W[:B],... | --configs-4k ... --configs-8k ...]\n", e.what(), program);
    return canopy_bench::exit_bad_command_line;
  }
  if (!cuda_device_present(program)) return 77;
  bool all_ok = true;
  const int sizes[][2] = {{128, 1}, {256, 33}, {1024, 100}, {640, 47}, {2048, 300}, {3840, 2160}, {7680, 4320}};
  for (auto& sz : sizes) {
    const int w = sz[0], h = sz[1];
    if (small_only && w >= 3840) continue;
    const bool timed = w >= 3840;
    const std::vector<config> configs = parse_configs(w >= 7680 ? c8 : c4, program);
    const std::size_t npx = std::size_t(w) * h;
    std::vector<std::uint32_t> img(npx);
    std::mt19937 rng(unsigned(w * 7 + h));
    for (auto& v : img) v = rng();
    std::uint32_t* dimg;
    uint4 *dtab, *dcopy;
    CK(cudaMalloc(&dimg, npx * 4));
    CK(cudaMalloc(&dtab, npx * 16));
    CK(cudaMalloc(&dcopy, npx * 16));
    CK(cudaMemcpy(dimg, img.data(), npx * 4, cudaMemcpyHostToDevice));
    const std::vector<std::uint32_t> ref = reference_sat_rgba8(img, w, h);
    std::vector<std::uint32_t> got(npx * 4);
    const double bytes = double(npx) * 20.0;
    const double copy = timed ? timed_us([&] { cudaMemcpyAsync(dcopy, dtab, npx * 16, cudaMemcpyDeviceToDevice); }) : 0.0;
    const double copy_gbps = timed ? 2.0 * npx * 16 / copy * 1e-3 : 0.0;
    if (timed) std::printf("%dx%d: copy %.1f us (%.0f GB/s)\n", w, h, copy, copy_gbps);
    runner run(dimg, dtab, w, h, img);
    for (const config& c : configs) {
      int maxcl = 0;
      if (!run.fits(c, &maxcl)) {
        std::printf("  %dx%d C=%d W=%d B=%d: %d clusters needed, %d fit at once: not run\n", w, h, c.C, c.warps, c.blocks_per_sm,
                    (run.S + c.C - 1) / c.C, maxcl);
        continue;
      }
      for (int mode = 0; mode < 2; ++mode) {
        const char* name = mode == 0 ? "cluster" : "given";
        auto check = [&](const char* when) {
          CK(cudaGetLastError());
          CK(cudaDeviceSynchronize());
          CK(cudaMemcpy(got.data(), dtab, npx * 16, cudaMemcpyDeviceToHost));
          const std::size_t bad = count_mismatches(got, ref, w);
          if (bad) {
            std::printf("  %dx%d %s C=%d W=%d B=%d: WRONG %s (%zu bad)\n", w, h, name, c.C, c.warps, c.blocks_per_sm, when, bad);
            all_ok = false;
          }
          return bad == 0;
        };
        CK(cudaMemset(dtab, 0xAB, npx * 16));
        run.launch(c, mode);
        const bool ok1 = check("on its first build");
        if (!timed) {
          if (ok1) std::printf("  %dx%d %s C=%d W=%d B=%d: exact\n", w, h, name, c.C, c.warps, c.blocks_per_sm);
          continue;
        }
        const double t = timed_us([&] { run.launch(c, mode); });
        const bool ok2 = check("after the timed builds");
        CK(cudaMemset(run.stamps, 0, 64));
        run.launch(c, mode, true);
        CK(cudaDeviceSynchronize());
        u64 st[8];
        CK(cudaMemcpy(st, run.stamps, 64, cudaMemcpyDeviceToHost));
        const double nb = double(st[4] ? st[4] : 1);
        std::printf("  %-7s C=%2d W=%2d B=%d (%d clusters, %d fit): %.1f us = %.1f%% of copy (%s) | kcycles a band: load+sums %.1f, exchange %.1f, chain %.1f, walk %.1f\n",
                    name, c.C, c.warps, c.blocks_per_sm, (run.S + c.C - 1) / c.C, maxcl, t, 100.0 * bytes / t * 1e-3 / copy_gbps,
                    ok1 && ok2 ? "exact" : "WRONG", st[0] * 1e-3 / nb, st[1] * 1e-3 / nb, st[2] * 1e-3 / nb, st[3] * 1e-3 / nb);
      }
    }
    cudaFree(dimg);
    cudaFree(dtab);
    cudaFree(dcopy);
  }
  std::printf("%s: %s\n", program, all_ok ? "ok" : "FAILED (tables differ from the reference)");
  return all_ok ? 0 : 1;
}
