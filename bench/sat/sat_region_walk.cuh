// Pieces shared by the prototypes whose walker warps write 256-px region rows of an RGBA8 -> u32
// table from an image buffer in shared memory through tensor bulk stores (canopy-sat-pipelined,
// canopy-sat-lookahead; sm_90, docs/sat.md): the chunk geometry, the band of rows a walker owns,
// the swizzled staging layout, the table's tensor map, a walker's band walk and the per-chunk stamp
// report.
#pragma once

#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "sat_proto_common.cuh"

namespace sat_proto {
namespace region_walk {

constexpr int RW = 256;  // region width: 8 px a lane

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
//! Where lane l keeps its pixel i (of 8 consecutive ones, 16 bytes each) in a shared 256-px row:
//! 16-byte unit i ^ (l & 7) of the lane's 128 bytes, so 8 lanes' units fall in different banks. It
//! is the tensor map's 128-byte swizzle on a 1024-byte aligned row.
__host__ __device__ inline int swz8(int lane, int i) { return 8 * lane + (i ^ (lane & 7)); }
//! Where a band's column sums keep lane l's 16-byte piece h (pixels 8 l + 2 h, + 1), as uint4
//! units of the band's row: conflict-free for the lanes' writes and reads.
__host__ __device__ inline int bandcol_unit(int lane, int h) { return 4 * lane + (h ^ ((lane >> 1) & 3)); }

__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void tensor_store(const CUtensorMap* tm, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(tm), "r"(shared_address(src)), "r"(c0),
               "r"(c1), "r"(c2)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
//! The same with an L2 cache policy.
__device__ __forceinline__ void tensor_store(const CUtensorMap* tm, const void* src, int c0, int c1, int c2, std::uint64_t pol) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group.L2::cache_hint [%0, {%2, %3, %4}], [%1], %5;" ::"l"(tm),
               "r"(shared_address(src)), "r"(c0), "r"(c1), "r"(c2), "l"(pol)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
//! Waits until at most n (0, 1 or 2) bulk groups of this thread still read shared memory.
__device__ __forceinline__ void bulk_wait_read(int n) {
  if (n <= 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  else if (n == 1) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
  else asm volatile("cp.async.bulk.wait_group.read 2;" ::: "memory");
}
//! Lane `lane`'s 8 pixels (words) of row r of an image buffer.
__device__ __forceinline__ void row_words(const std::uint32_t* buf, int r, int lane, std::uint32_t (&v)[8]) {
  const uint4* row = reinterpret_cast<const uint4*>(buf + std::size_t(r) * RW) + 2 * lane;
  const uint4 a = row[0], b = row[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

//! One warp: rl[r] for the region's n rows = rows 0..r of the image left of the region.
//! row_left(r) is row r's sum over the regions to the left.
template <class RowLeft>
__device__ __forceinline__ void row_carries(int n, int lane, uint4* rl, RowLeft row_left) {
  uint4 carry = make_uint4(0, 0, 0, 0);
  for (int r0 = 0; r0 < n; r0 += 32) {
    const int r = r0 + lane;
    uint4 s = make_uint4(0, 0, 0, 0);
    if (r < n) s = row_left(r);
    s = add4(warp_inclusive_sum4(s, lane), carry);
    if (r < n) rl[r] = s;
    carry = shfl4(s, 31);
  }
}
//! One warp: the table row above region (I, J) of a chunk of Gy region rows, into ti (8 px a lane,
//! swz8). coltop holds the region column's sums above the chunk and leftabove the sum above the
//! chunk left of the region; both move on to the next chunk here. total(i, j) is region (i, j)'s
//! total (j < J); columns(i, q) gives region (i, J)'s column sums of the lane's 8 pixels.
template <class Total, class Columns>
__device__ __forceinline__ void table_row_above(int Gy, int I, int J, int lane, uint4 (&coltop)[8], uint4& leftabove, uint4* ti,
                                                Total total, Columns columns) {
  uint4 a = make_uint4(0, 0, 0, 0), all = a;
  for (int idx = lane; idx < Gy * J; idx += 32) {
    const int i = idx / J, j = idx % J;
    const uint4 t = total(i, j);
    all = add4(all, t);
    if (i < I) a = add4(a, t);
  }
  a = warp_sum4(a);
  all = warp_sum4(all);
  uint4 ab[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) ab[i] = coltop[i];
  for (int ii = 0; ii < Gy; ++ii) {
    uint4 q[8];
    columns(ii, q);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (ii < I) ab[i] = add4(ab[i], q[i]);
      coltop[i] = add4(coltop[i], q[i]);
    }
  }
#pragma unroll
  for (int i = 1; i < 8; ++i) ab[i] = add4(ab[i], ab[i - 1]);
  const uint4 off = add4(add4(leftabove, a), warp_exclusive_sum4(ab[7], lane));
#pragma unroll
  for (int i = 0; i < 8; ++i) ti[swz8(lane, i)] = add4(ab[i], off);
  leftabove = add4(leftabove, all);
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
  bool write;                    // false: everything but the table stores (diagnostic)
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
      const uint4 ex = warp_exclusive_sum4(S[7], lane);
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

//! Cuts p's H rows into chunks of Gy regions: RH0 rows a region in chunk 0, RH in later ones; sets
//! p.NC, p.RH0, p.RH, p.RHL (the last chunk's rows, spread evenly), p.RHmax and p.RHs (RHmax rounded
//! up to even). Says why not (a region of more than 257 rows: 16-bit column sums).
template <class Params>
inline bool plan_chunks(Params& p, int RH0, int RH, std::string& why) {
  p.RH0 = RH0;
  p.RH = RH;
  int last_start;
  p.NC = region_exchange::chunks_of(p.H, p.Gy * RH0, p.Gy * RH, last_start);
  p.RHL = (p.H - last_start + p.Gy - 1) / p.Gy;
  p.RHmax = std::max({RH0, RH, p.RHL});
  p.RHs = (p.RHmax + 1) & ~1;
  if (p.RHmax > 257) why = "the last chunk has " + std::to_string(p.RHL) + " rows a region";
  return why.empty();
}

//! cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda).
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(const char* program) {
  static PFN_cuTensorMapEncodeTiled_v12000 f = nullptr;
  if (!f) {
    cudaDriverEntryPointQueryResult q{};
    SAT_PROTO_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&f), 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !f) {
      std::printf("%s: the driver has no cuTensorMapEncodeTiled\n", program);
      std::exit(1);
    }
  }
  return f;
}
//! The W x H u32 RGBA table `tab` as a 3D tensor of u32: 32 words (8 px) x W / 8 x H; a box is one
//! 256-px region row, 32 rows of 128 bytes in shared memory, one a lane, 16-byte units swizzled
//! within 1024 bytes (swz8). Says why not.
inline bool table_tensor_map(const char* program, uint4* tab, int W, int H, CUtensorMap& tm, std::string& why) {
  const cuuint64_t dims[3] = {32, cuuint64_t(W / 8), cuuint64_t(H)};
  const cuuint64_t strides[2] = {128, cuuint64_t(W) * 16};
  const cuuint32_t box[3] = {32, 32, 1}, estr[3] = {1, 1, 1};
  const CUresult r = tensor_map_encoder(program)(&tm, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, tab, dims, strides, box, estr,
                                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    why = "cuTensorMapEncodeTiled failed (" + std::to_string(int(r)) + ")";
    return false;
  }
  return true;
}

//! The stamp report of a build with B blocks and NC chunks. Stamp numbers: 0 first of a chunk's
//! producer stamps, 1 published, 2 released, 3 walk start, 4 walk end (walker 0), 5 SM id (chunk 0),
//! 6 second producer stamp, 7 summed, 8 the exchange's reads arrived, 9 carries ready; `first`
//! and `second` name stamps 0 and 6.
inline void print_stamp_report(const stamp_table& st, int B, int Gx, int NC, int nstamp, const char* first, const char* second) {
  auto at = [&](int bl, int s, int ch) { return st.at(bl, s, ch); };
  const double t0 = st.earliest(0, 0);
  std::vector<std::pair<double, int>> ends, waits;  // (value, block)
  for (int bl = 0; bl < B; ++bl) {
    ends.push_back({(at(bl, 4, NC - 1) - t0) * 1e-3, bl});
    double wsum = 0;
    for (int ch = 1; ch < NC; ++ch) wsum += std::max(0.0, at(bl, 3, ch) - at(bl, 4, ch - 1));
    waits.push_back({wsum * 1e-3, bl});
  }
  std::sort(ends.begin(), ends.end());
  std::sort(waits.begin(), waits.end());
  auto pct = [&](const std::vector<std::pair<double, int>>& d, const char* what) {
    std::printf("    %s (us): min %.2f p10 %.2f p50 %.2f p90 %.2f max %.2f; last (value@sm region): ", what, d[0].first, d[B / 10].first,
                d[B / 2].first, d[B * 9 / 10].first, d[B - 1].first);
    for (int i = B - 1; i >= std::max(0, B - 4); --i) {
      const int bl = d[i].second;
      std::printf("%.2f@%d (%d,%d) ", d[i].first, int(st.raw(bl, 5, 0)), bl / Gx, bl % Gx);
    }
    std::printf("\n");
  };
  pct(ends, "walker 0's last walk ends, from the first load");
  pct(waits, "walker 0's waits between chunks, summed");
  // Walker 0's time walking, summed over the chunks, by SM: the SMs that store slowest and fastest.
  std::vector<std::pair<double, int>> walks;
  for (int bl = 0; bl < B; ++bl) {
    double t = 0;
    for (int ch = 0; ch < NC; ++ch) t += at(bl, 4, ch) - at(bl, 3, ch);
    walks.push_back({t * 1e-3, int(st.raw(bl, 5, 0))});
  }
  std::sort(walks.begin(), walks.end());
  std::printf("    walker 0's walking time, summed (us@sm): slowest");
  for (int i = B - 1; i >= std::max(0, B - 8); --i) std::printf(" %.1f@%d", walks[i].first, walks[i].second);
  std::printf("; fastest");
  for (int i = 0; i < std::min(B, 8); ++i) std::printf(" %.1f@%d", walks[i].first, walks[i].second);
  std::printf("\n");
  for (int ch = 0; ch < NC; ++ch) {
    std::vector<double> m(nstamp, 0.0), mx(nstamp, 0.0);
    for (int bl = 0; bl < B; ++bl)
      for (int s = 0; s < nstamp && s < 10; ++s) {
        if (s == 5) continue;
        m[s] += (at(bl, s, ch) - t0) / B;
        mx[s] = std::max(mx[s], at(bl, s, ch) - t0);
      }
    int last = 0;
    for (int bl = 1; bl < B; ++bl)
      if (at(bl, 4, ch) > at(last, 4, ch)) last = bl;
    std::printf("    chunk %2d (us, mean / max): %s %.2f / %.2f (%s %.2f), summed %.2f, published %.2f / %.2f, released "
                "%.2f / %.2f, exchange read %.2f, carries %.2f, walk %.2f / %.2f to %.2f / %.2f (last: sm %d, region (%d,%d), walk %.2f)\n",
                ch, first, m[0] * 1e-3, mx[0] * 1e-3, second, m[6] * 1e-3, m[7] * 1e-3, m[1] * 1e-3, mx[1] * 1e-3, m[2] * 1e-3, mx[2] * 1e-3,
                m[8] * 1e-3, m[9] * 1e-3, m[3] * 1e-3, mx[3] * 1e-3, m[4] * 1e-3, mx[4] * 1e-3, int(st.raw(last, 5, 0)), last / Gx, last % Gx,
                (at(last, 4, ch) - at(last, 3, ch)) * 1e-3);
  }
}

//! The checked and timed runs of the region prototypes' configurations on one test image (the
//! run_prototype body of canopy-sat-pipelined and canopy-sat-lookahead). Runner(w, h) plans a
//! configuration (plan(c, img, tab, p, tm, smem, why)) and launches a build (launch(tm, p, smem,
//! mode, stamped)); modes 0 exact, 2 nostore and 3 empty are run, exact ones checked against the
//! reference on the first build and after the timed ones. `fields` names the configuration's
//! fields in the report; report(run, p) prints what a stamped build of a timed size recorded.
template <class Runner, class Params, class Config, class NameOf, class Report>
void run_region_configs(test_image& ti, bool timed, const std::vector<Config>& configs, bool& all_ok, const char* fields, NameOf name_of,
                        Report report) {
  const int w = ti.w, h = ti.h;
  Runner run(w, h);
  for (const Config& c : configs) {
    Params p;
    CUtensorMap tm;
    std::size_t smem;
    std::string why;
    const std::string cname = name_of(c);
    if (!run.plan(c, ti.dimg, ti.dtab, p, tm, smem, why)) {
      std::printf("  %dx%d %s: not run (%s)\n", w, h, cname.c_str(), why.c_str());
      continue;
    }
    const int modes[] = {0, 2, 3};
    for (int mi = 0; mi < (timed ? 3 : 1); ++mi) {
      const int mode = modes[mi];
      const char* name = mode == 0 ? "exact" : mode == 2 ? "nostore" : "empty";
      auto check = [&](const char* when) {
        if (mode == 0) return ti.table_exact(std::string(name) + " " + cname, when, all_ok);
        SAT_PROTO_CHECK(cudaGetLastError());
        SAT_PROTO_CHECK(cudaDeviceSynchronize());
        return true;
      };
      SAT_PROTO_CHECK(cudaMemset(ti.dtab, 0xAB, ti.npx * 16));
      run.launch(tm, p, smem, mode);
      bool ok1 = check("on its first build");
      if (mode == 0 && checked_builds > 0) {  // more builds, each checked
        int good = 0;
        for (int i = 0; i < checked_builds; ++i) {
          SAT_PROTO_CHECK(cudaMemset(ti.dtab, 0xAB, ti.npx * 16));
          run.launch(tm, p, smem, mode);
          if (check("on a checked build")) ++good;
        }
        std::printf("  %dx%d%s %s %s: %d of %d more builds exact\n", w, h, ti.label(), name, cname.c_str(), good, checked_builds);
        ok1 = ok1 && good == checked_builds;
      }
      if (!timed) {
        if (ok1) std::printf("  %dx%d%s %s %s (%dx%d blocks, %d chunks): exact\n", w, h, ti.label(), name, cname.c_str(), p.Gx, p.Gy, p.NC);
        continue;
      }
      const double t = timed_us([&] { run.launch(tm, p, smem, mode); });
      const bool ok2 = check("after the timed builds");
      std::printf("  %-7s %s %s (%dx%d blocks, %d chunks, %zu B smem): %.1f us = %.1f%% of copy (%s)\n", name, fields, cname.c_str(), p.Gx,
                  p.Gy, p.NC, smem, t, 100.0 * ti.bytes / t * 1e-3 / ti.copy_gbps, mode ? "not checked" : (ok1 && ok2 ? "exact" : "WRONG"));
      if (mode == 3) continue;
      run.launch(tm, p, smem, mode, true);
      report(run, p);
    }
  }
}

}  // namespace region_walk
}  // namespace sat_proto
