// canopy-sat-resident: a measuring prototype (not the library's kernel; CUDA builds only, sm_90,
// not run by CTest) of a SAT for RGBA8 -> u32 that holds a chunk of the image in shared memory and
// runs its phases one after another, separated by grid-wide barriers (docs/sat.md, "Image resident
// in shared memory, phases in turn", session 18).
//
// Session 17's chunks overlapped one chunk's exchange with another's table stores and paid 13-15 us
// a chunk in dependent waits. This form asks what the plain sequence costs when nothing depends on
// a neighbour except through one grid barrier a chunk:
//   1. every block holds an RH x RW region of the chunk in shared memory (bulk copies, one a row);
//   2. each warp sums its TH rows of the region (row sums, column sums), the block publishes its
//      region's row sums, column sums (16-bit channel pairs) and total to a global slot;
//   3. one grid barrier (a counter a chunk, epoch-tagged so it is never cleared);
//   4. each block reads the row sums of the regions to its left, the column sums of its region
//      column and the totals left of it, and with two running sums it keeps (columns above the
//      chunk, everything above the chunk to its left) has its table's top row and left column;
//   5. each warp walks its rows (one warp scan a 32-px group, column sums in registers) and stores
//      512 contiguous bytes a store instruction; as soon as it has walked a group of RG rows it
//      requests the same rows of the next chunk into them, so the next chunk loads while this one
//      is written.
// Regions: Gx = W / RW region columns (RW = 32 G px, G = 4 or 8: a 256-px row sum still fits the
// 16-bit channel pairs; session 18's calls also ran G = 10, whose 320-px row sums overflow them on
// bright images and which is gone), Gy region rows a chunk, one
// block an SM (cooperative launch). Chunk 0 has TH0 rows a warp, the others TH, the last chunk's
// rows spread evenly over its regions.
// Modes: "exact" (also launched plainly: "exact-plain"); diagnostics (tables wrong by design, not
// checked): "nobarrier" (no grid wait, the exchange reads whatever is there), "nostore" (no table
// stores), "empty" / "empty-plain" (the launch and set-up alone). Stamps (globaltimer) mark each
// chunk's load, sums, barrier release, carries and walk, and each block's walk time is reported
// with its SM. Tables are checked exactly against a CPU reference; timings are
// canopy_bench::median_ms_on_stream medians against a device-to-device copy of a table-sized buffer
// in the same run. Exits 1 if a table is wrong.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sat_proto_common.cuh"

using namespace sat_proto;
#define CK SAT_PROTO_CHECK

namespace resident {

constexpr int MAX_CHUNKS = 64;
constexpr int MAX_WARPS = 16;
constexpr int NSTAMP = 6;  // per chunk: loaded, summed, released, carries, walked; SM id (chunk 0)
using u64 = unsigned long long;

// region_params plus this form's own. Slots: row sums [2][Gy][Gx][RHmax] (R|B, G|A pairs), column
// sums [2][Gy][Gx][RW], totals [2][Gy][Gx]. Modes: 0 exact, 1 no grid barrier, 2 no table stores,
// 3 empty (set-up only).
struct params : region_params {
  int NW, TH0, TH, THL, THmax, RHmax, RG;  // THL: the last chunk's rows a warp (its rows spread evenly)
  int hint;                                // table stores: 0 st.global, 1 st.global.cs
};

__device__ __forceinline__ void store_cs(uint4* a, uint4 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

//! Rows a warp holds in chunk c, and the first row of the region's top (image row).
struct chunk_rows {
  int th, top;  // rows a warp; the region's first image row
};
__device__ __forceinline__ chunk_rows rows_of(const params& p, int c, int I) {
  const int th = c == p.NC - 1 ? p.THL : c ? p.TH : p.TH0;
  const int start = c ? p.Gy * p.NW * (p.TH0 + (c - 1) * p.TH) : 0;
  return {th, start + I * p.NW * th};
}

template <int G>
__global__ void __launch_bounds__(MAX_WARPS * 32, 1) sat_resident(params p) {
  constexpr int RW = 32 * G;
  extern __shared__ __align__(128) unsigned char smem[];
  const int NW = p.NW;
  std::uint32_t* img_s = reinterpret_cast<std::uint32_t*>(smem);
  uint2* tilecol = reinterpret_cast<uint2*>(img_s + std::size_t(NW) * p.THmax * RW);  // [NW][RW]
  uint4* colab_s = reinterpret_cast<uint4*>(tilecol + NW * RW);                        // [RW] columns above the region
  uint4* coltop_s = colab_s + RW;                                                       // [RW] columns above the chunk
  uint4* wtot = coltop_s + RW;                                                          // [NW] warps' sums
  uint4* rtot = wtot + NW;                                                              // [NW] warps' row-carry sums
  uint4* misc = rtot + NW;                                                              // corner, left of the chunk
  unsigned long long* mbar = reinterpret_cast<unsigned long long*>(misc + 2);
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int blk = blockIdx.x, I = blk / p.Gx, J = blk % p.Gx, x0 = J * RW;
  std::uint32_t* my = img_s + std::size_t(w) * p.THmax * RW;
  const std::uint64_t pol = policy_evict_first();
  const bool stamping = p.stamps && threadIdx.x == 0;
  auto stamp = [&](int s, int c) { p.stamps[stamp_index(blk, s, c, NSTAMP, MAX_CHUNKS)] = global_ns(); };

  if (lane == 0) mbarrier_init(&mbar[w], 1);
  for (int i = threadIdx.x; i < RW; i += blockDim.x) coltop_s[i] = make_uint4(0, 0, 0, 0);
  if (threadIdx.x == 0) misc[1] = make_uint4(0, 0, 0, 0);
  __syncthreads();

  // Requests rows [r0, r1) of this warp's part of chunk c (lane 0 only; clipped to the image).
  auto request = [&](int c, int r0, int r1) {
    const chunk_rows cr = rows_of(p, c, I);
    const int ya = cr.top + w * cr.th;
    r1 = std::min(r1, std::min(cr.th, p.H - ya));
    if (r0 >= r1) return;
    mbar_expect_tx(&mbar[w], unsigned(r1 - r0) * RW * 4);
    for (int r = r0; r < r1; ++r) bulk_copy_to_shared<true>(my + r * RW, p.img + std::size_t(ya + r) * p.W + x0, RW * 4, &mbar[w], pol);
  };
  if (p.mode == 3) return;  // the launch and set-up alone
  if (lane == 0) {
    request(0, 0, p.TH0);
    mbar_arrive(&mbar[w]);
  }

  if (stamping) p.stamps[stamp_index(blk, 5, 0, NSTAMP, MAX_CHUNKS)] = smid();
  std::uint32_t sink = 0;
  for (int c = 0; c < p.NC; ++c) {
    const int slot = c & 1;
    const chunk_rows cr = rows_of(p, c, I);
    const int rtop = w * cr.th, ya = cr.top + rtop;
    const int n = std::max(0, std::min(cr.th, p.H - ya));
    const std::size_t base = (std::size_t(slot) * p.Gy + I) * p.Gx + J;
    mbarrier_wait(&mbar[w], unsigned(c & 1));
    if (stamping) stamp(0, c);

    // 2. Sums of the warp's rows.
    {
      lane_sums<G> sums;  // (RW <= 256 px a row sum, TH <= 32 rows a column sum: both fit 16 bits)
#pragma unroll 2
      for (int r = 0; r < n; ++r) {
        std::uint32_t q[G], sRB, sGA;
#pragma unroll
        for (int k = 0; k < G; ++k) q[k] = my[r * RW + lane + 32 * k];
        sums.add_words(q, r, lane, sRB, sGA);
      }
#pragma unroll
      for (int k = 0; k < G; ++k) tilecol[w * RW + lane + 32 * k] = make_uint2(sums.cRB[k], sums.cGA[k]);
      if (lane < n) p.rowsum[base * p.RHmax + rtop + lane] = make_uint2(sums.myRB, sums.myGA);
      const uint4 t = warp_sum4(sums.row());
      if (lane == 0) wtot[w] = t;
    }
    __syncthreads();
    for (int sl = w; sl < G; sl += NW) {  // the region's column sums, a 32-px slice a warp
      const int x = 32 * sl + lane;
      std::uint32_t a = 0, b = 0;
      for (int v = 0; v < NW; ++v) {
        const uint2 t = tilecol[v * RW + x];
        a += t.x;
        b += t.y;
      }
      p.colsum[base * RW + x] = make_uint2(a, b);
    }
    if (w == NW - 1 && lane == 0) {
      uint4 t = make_uint4(0, 0, 0, 0);
      for (int v = 0; v < NW; ++v) t = add4(t, wtot[v]);
      p.total[base] = t;
    }
    __syncthreads();
    // 3. Grid barrier.
    if (threadIdx.x == 0) {
      if (stamping) stamp(1, c);
      __threadfence();
      atomicAdd(&p.cnt[c], 1u);  // counted in every mode: the next build's target assumes it
      if (p.mode != 1)
        while (ld_acquire_gpu(&p.cnt[c]) < p.target) {
        }
      if (stamping) stamp(2, c);
    }
    __syncthreads();
    // 4. Carries.
    uint4 Rl = make_uint4(0, 0, 0, 0);  // lane r: rows rtop..rtop + r, left of the region
    {
      if (lane < n)
        for (int j = 0; j < J; ++j)
          Rl = add4(Rl, rgba_of_pairs(__ldcg(&p.rowsum[((std::size_t(slot) * p.Gy + I) * p.Gx + j) * p.RHmax + rtop + lane])));
      Rl = warp_inclusive_sum4(Rl);
      if (lane == 31) rtot[w] = Rl;
    }
    for (int sl = w; sl < G; sl += NW) {
      const int x = 32 * sl + lane;
      uint4 above = coltop_s[x], all = make_uint4(0, 0, 0, 0);
      for (int i = 0; i < p.Gy; ++i) {
        const uint4 q = rgba_of_pairs(__ldcg(&p.colsum[((std::size_t(slot) * p.Gy + i) * p.Gx + J) * RW + x]));
        if (i < I) above = add4(above, q);
        all = add4(all, q);
      }
      colab_s[x] = above;
      coltop_s[x] = add4(coltop_s[x], all);
    }
    if (w == NW - 1) {
      uint4 a = make_uint4(0, 0, 0, 0), b = a;
      for (int idx = lane; idx < p.Gy * J; idx += 32) {
        const int i = idx / J, j = idx % J;
        const uint4 t = __ldcg(&p.total[(std::size_t(slot) * p.Gy + i) * p.Gx + j]);
        b = add4(b, t);
        if (i < I) a = add4(a, t);
      }
      a = warp_sum4(a);
      b = warp_sum4(b);
      if (lane == 0) {
        const uint4 left = misc[1];
        misc[0] = add4(left, a);
        misc[1] = add4(left, b);
      }
    }
    __syncthreads();
    if (stamping) stamp(3, c);
    for (int v = 0; v < w; ++v) Rl = add4(Rl, rtot[v]);
    uint4 T[G];  // the table at row ya - 1 over the lane's columns
    {
      uint4 off = misc[0];
#pragma unroll
      for (int k = 0; k < G; ++k) {
        const int x = lane + 32 * k;
        std::uint32_t a = 0, b = 0;
        for (int v = 0; v < w; ++v) {
          const uint2 t = tilecol[v * RW + x];
          a += t.x;
          b += t.y;
        }
        const uint4 in = warp_inclusive_sum4(add4(colab_s[x], rgba_of_pairs(a, b)));
        T[k] = add4(off, in);
        off = add4(off, shfl_idx(in, 31));
      }
    }
    __syncthreads();  // tilecol, colab_s and rtot are rewritten by the next chunk

    // 5. Walk, requesting the next chunk's rows as they free up.
    const bool next = c + 1 < p.NC;
    if (next && lane == 0) request(c + 1, n, p.THmax);  // rows this chunk does not use
    int freed = 0;
    uint4* trow = p.tab + std::size_t(ya) * p.W + x0 + lane;
    for (int r = 0; r < n; ++r, trow += p.W) {
      const uint4 rl = shfl_idx(Rl, r);
      std::uint32_t oRB = 0, oGA = 0;
#pragma unroll
      for (int k = 0; k < G; ++k) {
        const std::uint32_t v = my[r * RW + lane + 32 * k];
        std::uint32_t rb = v & 0x00FF00FFu, ga = (v >> 8) & 0x00FF00FFu;
        warp_inclusive_sum2(rb, ga, lane);
        rb += oRB;
        ga += oGA;
        oRB = __shfl_sync(~0u, rb, 31);
        oGA = __shfl_sync(~0u, ga, 31);
        T[k] = add4(T[k], rgba_of_pairs(rb, ga));
        const uint4 out = add4(T[k], rl);
        if (p.mode == 2) sink ^= out.x ^ out.y ^ out.z ^ out.w;
        else if (p.hint) store_cs(trow + 32 * k, out);
        else trow[32 * k] = out;
      }
      if (next && ((r + 1) % p.RG == 0 || r + 1 == n)) {
        __syncwarp();
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        if (lane == 0) request(c + 1, freed, r + 1);
        freed = r + 1;
      }
    }
    if (next && lane == 0) mbar_arrive(&mbar[w]);
    if (stamping) stamp(4, c);
  }
  if (sink == 0x9E3779B9u) p.tab[0].x = sink;  // keeps the nostore diagnostic's work alive
}

//! Store probe (diagnostic): every block writes 64 KB pieces of `out` (512 contiguous bytes a store
//! instruction), either a fixed equal share each (static: block b takes pieces [b n / G, (b + 1) n / G))
//! or claimed one at a time from a counter (dynamic; each block fails one claim a build, so build e
//! starts at (e - 1) (n + G)). Stamps each block's end (static): how evenly the SMs' stores drain.
__global__ void __launch_bounds__(512) store_probe(uint4* out, std::size_t n16, int dynamic, unsigned* ctr, unsigned base, u64* fin) {
  constexpr std::size_t piece = 4096;  // 16-byte words
  const std::size_t npieces = (n16 + piece - 1) / piece;
  __shared__ unsigned s_next;
  auto write = [&](std::size_t pc) {
    const std::size_t lo = pc * piece, hi = std::min(n16, lo + piece);
    for (std::size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) out[i] = make_uint4(unsigned(i), unsigned(i >> 32) + 1u, 7u, 9u);
  };
  if (!dynamic) {
    const std::size_t a = npieces * blockIdx.x / gridDim.x, b = npieces * (blockIdx.x + 1) / gridDim.x;
    for (std::size_t pc = a; pc < b; ++pc) write(pc);
  } else {
    if (threadIdx.x == 0) s_next = atomicAdd(ctr, 1u) - base;
    __syncthreads();
    for (;;) {
      const unsigned pc = s_next;
      __syncthreads();
      if (pc >= npieces) break;
      if (threadIdx.x == 0) s_next = atomicAdd(ctr, 1u) - base;  // claimed while this piece is written
      write(pc);
      __syncthreads();
    }
  }
  __syncthreads();
  if (fin && threadIdx.x == 0) fin[blockIdx.x] = global_ns();
}

struct config {
  int G, NW, Gy, TH0, TH, RG, hint;
};
std::vector<config> parse_configs(const std::string& s, const char* program) {
  std::vector<config> out;
  for (const std::string& one : config_items(s)) {
    config c{0, 0, 0, 0, 0, 4, 0};
    if (std::sscanf(one.c_str(), "%d:%d:%d:%d:%d:%d:%d", &c.G, &c.NW, &c.Gy, &c.TH0, &c.TH, &c.RG, &c.hint) < 5 || (c.G != 4 && c.G != 8) ||
        c.NW < 1 || c.NW > MAX_WARPS || c.Gy < 1 || c.TH0 < 1 || c.TH0 > 32 || c.TH < 1 || c.TH > 32 || c.RG < 1 || c.hint < 0 || c.hint > 1) {
      std::printf("%s: bad configuration '%s' (G:NW:Gy:TH0:TH[:RG[:hint]], G 4 or 8, NW <= 16, TH0 and TH <= 32, RG >= 1, hint 0 or 1)\n", program, one.c_str());
      std::exit(canopy_bench::exit_bad_command_line);
    }
    out.push_back(c);
  }
  return out;
}

std::size_t smem_bytes(int G, int NW, int THmax) {
  const int RW = 32 * G;
  return std::size_t(NW) * THmax * RW * 4 + std::size_t(NW) * RW * 8 + 2 * std::size_t(RW) * 16 + 2 * std::size_t(NW) * 16 + 32 +
         std::size_t(NW) * 8;
}

const void* kernel_for(int G) {
  return G == 4 ? reinterpret_cast<const void*>(sat_resident<4>) : reinterpret_cast<const void*>(sat_resident<8>);
}

struct runner : region_exchange {
  int W, H;
  runner(int W_, int H_) : region_exchange(MAX_CHUNKS, NSTAMP), W(W_), H(H_) {}
  bool plan(const config& c, const std::uint32_t* img, uint4* tab, params& p, std::size_t& smem, std::string& why) {
    p = params{};
    if (!begin_plan(p, img, tab, W, H, 32 * c.G, c.Gy, why)) return false;
    p.NW = c.NW;
    p.TH0 = c.TH0;
    p.TH = c.TH;
    p.THmax = std::max(c.TH0, c.TH);
    p.RHmax = c.NW * p.THmax;
    p.RG = c.RG;
    p.hint = c.hint;
    const int R0 = p.Gy * c.NW * c.TH0, R = p.Gy * c.NW * c.TH;
    int last_start;
    p.NC = chunks_of(H, R0, R, last_start);
    p.THL = (H - last_start + p.Gy * c.NW - 1) / (p.Gy * c.NW);
    smem = smem_bytes(c.G, c.NW, p.THmax);
    if (p.RHmax > 257) {
      why = "regions of " + std::to_string(p.RHmax) + " rows (16-bit column sums hold 257)";
      return false;
    }
    return fits(p.Gx, p.NC, kernel_for(c.G), c.NW * 32, smem, why);
  }
  //! Modes 0-3 as params::mode, cooperative launch; 4 and 5: modes 3 and 0 launched plainly (every
  //! block still fits at once: one an SM, grid <= SMs).
  void launch(int G, params p, std::size_t smem, int mode, bool stamped = false) {
    const bool plain = mode >= 4;
    next_build(p, mode == 4 ? 3 : mode == 5 ? 0 : mode, stamped);
    void* args[] = {&p};
    const void* k = kernel_for(G);
    if (plain) CK(cudaLaunchKernel(k, dim3(p.Gx * p.Gy), dim3(p.NW * 32), args, smem, nullptr));
    else CK(cudaLaunchCooperativeKernel(k, dim3(p.Gx * p.Gy), dim3(p.NW * 32), args, smem, nullptr));
  }
};

}  // namespace resident

int main(int argc, char** argv) {
  using namespace resident;
  return run_prototype(argc, argv, "canopy-sat-resident", "G:NW:Gy:TH0:TH[:RG[:hint]]",
                       "8:8:8:17:17,8:8:8:9:17,8:12:8:12:12,8:8:8:17:17:4:1", "8:8:4:23:23,8:12:4:15:15,8:12:4:8:15,8:8:4:23:23:4:1",
                       "4:8:8:2:4:1,4:8:8:4:8,8:4:8:3:5:2,4:16:2:1:2:3",
                       {{128, 1}, {256, 33}, {1024, 100}, {640, 47}, {2048, 300}, {384, 1000}, {3840, 2160}, {7680, 4320}}, parse_configs,
                       [](test_image& ti, bool timed, const std::vector<config>& configs, bool& all_ok) {
    const int w = ti.w, h = ti.h;
    runner run(w, h);
    if (timed) {  // the store probe: static shares against claimed pieces
      const std::size_t n16 = ti.npx, npieces = (n16 + 4095) / 4096;  // the table: one 16-byte word a pixel
      const int G = run.sms;
      unsigned epoch = 0;
      CK(cudaMemset(run.cnt, 0, 4));
      auto launch = [&](int dynamic, u64* fin) {
        const unsigned base = dynamic ? (epoch++) * unsigned(npieces + G) : 0u;
        store_probe<<<G, 512>>>(ti.dtab, n16, dynamic, run.cnt, base, fin);
      };
      for (int dynamic = 0; dynamic < 2; ++dynamic) {
        const double t = timed_us([&] { launch(dynamic, nullptr); });
        std::printf("  store probe, %s pieces, %d blocks: %.1f us = %.0f GB/s written\n", dynamic ? "claimed" : "static", G, t,
                    double(n16) * 16 / t * 1e-3);
        if (dynamic) break;
        CK(cudaMemset(run.stamps, 0, std::size_t(G) * 8));
        launch(0, run.stamps);
        CK(cudaDeviceSynchronize());
        std::vector<u64> fin(G);
        CK(cudaMemcpy(fin.data(), run.stamps, std::size_t(G) * 8, cudaMemcpyDeviceToHost));
        std::sort(fin.begin(), fin.end());
        std::printf("    static: blocks end (us after the first) p10 %.2f p50 %.2f p90 %.2f max %.2f\n", (fin[G / 10] - fin[0]) * 1e-3,
                    (fin[G / 2] - fin[0]) * 1e-3, (fin[G * 9 / 10] - fin[0]) * 1e-3, (fin[G - 1] - fin[0]) * 1e-3);
      }
    }
    for (const config& c : configs) {
      params p;
      std::size_t smem;
      std::string why;
      const std::string cname = std::to_string(c.G) + ":" + std::to_string(c.NW) + ":" + std::to_string(c.Gy) + ":" + std::to_string(c.TH0) + ":" +
                                std::to_string(c.TH) + ":" + std::to_string(c.RG) + ":" + std::to_string(c.hint);
      if (!run.plan(c, ti.dimg, ti.dtab, p, smem, why)) {
        std::printf("  %dx%d %s: not run (%s)\n", w, h, cname.c_str(), why.c_str());
        continue;
      }
      for (int mode = 0; mode < (timed ? 6 : 1); ++mode) {
        const char* names[] = {"exact", "nobarrier", "nostore", "empty", "empty-plain", "exact-plain"};
        const char* name = names[mode];
        auto check = [&](const char* when) {
          if (mode == 0 || mode == 5) return ti.table_exact(std::string(name) + " " + cname, when, all_ok);
          CK(cudaGetLastError());
          CK(cudaDeviceSynchronize());
          return true;
        };
        CK(cudaMemset(ti.dtab, 0xAB, ti.npx * 16));
        run.launch(c.G, p, smem, mode);
        const bool ok1 = check("on its first build");
        if (!timed) {
          if (ok1) std::printf("  %dx%d%s %s %s (%dx%d blocks, %d chunks): exact\n", w, h, ti.label(), name, cname.c_str(), p.Gx, p.Gy, p.NC);
          continue;
        }
        const double t = timed_us([&] { run.launch(c.G, p, smem, mode); });
        const bool ok2 = check("after the timed builds");
        run.launch(c.G, p, smem, mode, true);
        const int B = p.Gx * p.Gy;
        const stamp_table st(run.stamps, B, NSTAMP, MAX_CHUNKS);
        auto at = [&](int b, int s, int ch) { return st.at(b, s, ch); };
        const double t0 = st.earliest(0, 0);
        std::printf("  %-9s G:NW:Gy:TH0:TH:RG:hint %s (%dx%d blocks, %d chunks, %zu B smem): %.1f us = %.1f%% of copy (%s)\n", name,
                    cname.c_str(), p.Gx, p.Gy, p.NC, smem, t, 100.0 * ti.bytes / t * 1e-3 / ti.copy_gbps,
                    (mode && mode != 5) ? "not checked" : (ok1 && ok2 ? "exact" : "WRONG"));
        if (mode >= 3) continue;  // no stamps from the empty kernels; the plain exact run's are as above
        {  // how evenly the blocks walk: each block's walk time summed over chunks
          std::vector<std::pair<double, int>> d;
          for (int b = 0; b < B; ++b) {
            double s = 0;
            for (int ch = 0; ch < p.NC; ++ch) s += at(b, 4, ch) - at(b, 3, ch);
            d.push_back({s * 1e-3, int(st.raw(b, 5, 0))});
          }
          std::sort(d.begin(), d.end());
          std::printf("    walk time a block (us): min %.2f p10 %.2f p50 %.2f p90 %.2f max %.2f; slowest (block sm): ", d[0].first, d[B / 10].first,
                      d[B / 2].first, d[B * 9 / 10].first, d[B - 1].first);
          for (int i = B - 1; i >= std::max(0, B - 6); --i) std::printf("%.2f@%d ", d[i].first, d[i].second);
          std::printf("fastest: ");
          for (int i = 0; i < std::min(B, 6); ++i) std::printf("%.2f@%d ", d[i].first, d[i].second);
          std::printf("\n");
        }
        for (int ch = 0; ch < p.NC; ++ch) {
          double m[5] = {}, mx[5] = {};
          for (int b = 0; b < B; ++b)
            for (int s = 0; s < 5; ++s) {
              m[s] += (at(b, s, ch) - t0) / B;
              mx[s] = std::max(mx[s], at(b, s, ch) - t0);
            }
          std::printf("    chunk %d (us from the first block's first load; mean / max over blocks): loaded %.2f / %.2f, summed %.2f / %.2f, "
                      "released %.2f / %.2f, carries %.2f / %.2f, walked %.2f / %.2f\n",
                      ch, m[0] * 1e-3, mx[0] * 1e-3, m[1] * 1e-3, mx[1] * 1e-3, m[2] * 1e-3, mx[2] * 1e-3, m[3] * 1e-3, mx[3] * 1e-3,
                      m[4] * 1e-3, mx[4] * 1e-3);
        }
      }
    }
  });
}
