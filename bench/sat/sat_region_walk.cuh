// Pieces shared by the prototypes whose walker warps write 256-px region rows of an RGBA8 -> u32
// table from an image buffer in shared memory through tensor bulk stores (canopy-sat-pipelined,
// canopy-sat-lookahead; sm_90, docs/sat.md): the library's region geometry and band walk
// (canopy/structures/detail/sat_region_kernels.cuh), plus the chunk plan and tensor map that say
// why not, the per-chunk stamp report and the run driver.
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

// The region geometry, the carries and the band walk are the library's region kernel's
// (canopy/structures/detail/sat_region_kernels.cuh).
using namespace canopy::detail::sat_region;

//! plan_chunks, saying why not.
template <class Params>
inline bool plan_chunks(Params& p, int RH0, int RH, std::string& why) {
  if (canopy::detail::sat_region::plan_chunks(p, RH0, RH)) return true;
  why = "the last chunk has " + std::to_string(p.RHL) + " rows a region";
  return false;
}

//! The W x H u32 RGBA table `tab` as the region kernels' tensor map (encode_table_map). Says why not.
inline bool table_tensor_map(const char* program, uint4* tab, int W, int H, CUtensorMap& tm, std::string& why) {
  if (encode_table_map(tab, W, H, tm)) return true;
  why = std::string(program) + ": cuTensorMapEncodeTiled failed or is missing";
  return false;
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
