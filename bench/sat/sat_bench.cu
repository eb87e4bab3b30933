// canopy-sat-bench: summed-area table throughput against the copy bandwidth of the same device,
// the single-pass kernel against the two-pass baseline, and SAT depth of field at 4K.
//
//   canopy-sat-bench [--backend host|cuda|auto] [--quick] [--reps N] [--size WxH]... [--only T]
//                    [--region-plan RH:NS:D] [--r8-quads auto|always|never] [--out file.json]
//
// single_pass is build_sat() (temporary scratch from the context's resource); kept is
// summed_area_table::build(), the per-frame API, which keeps its look-back scratch between builds
// (tagged descriptor words with an epoch for u32 / f32 tables; docs/sat.md). Where a build takes
// a region kernel (on sm_90: RGBA8 -> u32 at widths of a multiple of 256 px, RGBA32F -> f32 at
// multiples of 128 px), the tile kernel is timed too (kept, with the region kernel switched off),
// and both are reported. On CUDA, tables built with CUB (cub::DeviceScan::InclusiveScanByKey over
// rows, then columns either through a permutation or between two transposes: sat_cub_baseline.cuh)
// are timed in the same run and checked against the two-pass table; the ratio is against the
// faster. Where CMake finds NPP, NPP's integral image is timed for R8 and RGBA8 (split into planes
// first; sat_npp_baseline.cuh). --only and --region-plan are for measuring sweeps.
// GB/s counts the bytes a table build must move at least: the image once and the table once.
// The copy bandwidth is that of a device-to-device copy of a table-sized buffer (read + write),
// measured in the same run. Times are medians of >= 20 runs after warm-up (CUDA events on CUDA,
// steady_clock on the host). Every result is checked (fast path == baseline exactly for integer
// tables, within the float bound for f32; box sums against brute force) before it is reported.
#include "common/bench_common.hpp"

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/timer.hpp>
#include <canopy/structures/detail/sat_functors.cuh>  // testing hooks: the region kernel's launch count and switch
#include <canopy/structures/dof.hpp>
#include <canopy/structures/sat.hpp>

//! 1 where CUB can be called (nvcc, CUDA build): then the CUB-built table is timed beside canopy's.
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#define CANOPY_SAT_BENCH_CUB 1
#include "sat_cub_baseline.cuh"
#else
#define CANOPY_SAT_BENCH_CUB 0
#endif
//! 1 where CMake found NPP (bench/sat/CMakeLists.txt): NPP's integral image is timed for u8 -> 32-bit, 1 or 4 channels.
#if CANOPY_SAT_BENCH_CUB && defined(CANOPY_SAT_BENCH_NPP) && CANOPY_SAT_BENCH_NPP
#include "sat_npp_baseline.cuh"
#else
#undef CANOPY_SAT_BENCH_NPP
#define CANOPY_SAT_BENCH_NPP 0
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

//! Median milliseconds of f() over `reps` runs after 3 warm-up runs (bench_common.hpp).
struct timer_median {
  canopy::context& ctx;
  int reps;
  double operator()(const std::function<void()>& f) const { return canopy_bench::median_ms(ctx, 3, reps, {}, f); }
};

std::vector<std::string> records;
bool all_ok = true;

void fail(const std::string& what) {
  std::fprintf(stderr, "canopy-sat-bench: CHECK FAILED: %s\n", what.c_str());
  all_ok = false;
}

template <class In, class Table>
void bench_sat(canopy::context& ctx, const timer_median& time, const char* name, int w, int h, int c) {
  const std::size_t n = std::size_t(w) * h * c;
  std::vector<In> img(n);
  std::mt19937 rng(unsigned(w * 31 + h));
  for (auto& v : img) {
    if constexpr (std::is_floating_point_v<In>) v = 0.05f + float(rng() % 1000) / 1000.0f;  // never zero
    else v = In(1 + rng() % 255);
  }
  canopy::buffer<In> image(ctx, n);
  image.assign(img);
  canopy::buffer<Table> fast(ctx, n), base(ctx, n), off_fast(ctx, canopy::sat_has_offset_v<Table> ? c : 0),
      off_base(ctx, canopy::sat_has_offset_v<Table> ? c : 0);
  canopy::sat_options single, two;
  single.algorithm = canopy::sat_algorithm::single_pass;
  two.algorithm = canopy::sat_algorithm::two_pass;

  // Copy bandwidth: device-to-device (or host memcpy) of a table-sized buffer.
  canopy::buffer<Table> copy_dst(ctx, n);
  const double copy_ms = time([&] { canopy::copy(ctx, canopy::span<const Table>(fast.view()), copy_dst.view()); });
  const double copy_gbps = 2.0 * double(n * sizeof(Table)) / copy_ms * 1e-6;
  // Write-only bandwidth (a fill of the same buffer): what the table-writing half can reach at most.
  const double fill_ms = time([&] { copy_dst.fill_bytes(1); });
  const double write_gbps = double(n * sizeof(Table)) / fill_ms * 1e-6;

  const double fast_ms = time([&] {
    canopy::build_sat<In, Table>(ctx, image.view(), w, h, c, fast.view(), off_fast.view(), single);
  });
  const double base_ms = time([&] {
    canopy::build_sat<In, Table>(ctx, image.view(), w, h, c, base.view(), off_base.view(), two);
  });
  auto& hooks = canopy::detail::sat::testing();
  const unsigned long long region_before = hooks.region_launches, quads_before = hooks.quad_launches;
  canopy::summed_area_table<Table> kept(ctx);
  const double kept_ms = time([&] { kept.template build<In>(image.view(), w, h, c, single); });
  const bool region = hooks.region_launches != region_before;
  const bool quads = hooks.quad_launches != quads_before;
  // R8 built as RGBA8 quads: the same kept builds of R8 directly, and build_sat()'s both ways.
  double direct_ms = 0, direct_single_ms = 0;
  canopy::summed_area_table<Table> direct(ctx);
  const int quad_choice_before = hooks.quad_choice;
  if (quads) {
    hooks.quad_choice = canopy::detail::sat::testing_hooks::region_never;
    direct_ms = time([&] { direct.template build<In>(image.view(), w, h, c, single); });
    direct_single_ms = time([&] {
      canopy::build_sat<In, Table>(ctx, image.view(), w, h, c, copy_dst.view(), off_base.view(), single);
    });
    hooks.quad_choice = quad_choice_before;
  }
  // The tile kernel where the region kernel ran: the same kept builds with it switched off.
  double tile_ms = 0;
  canopy::summed_area_table<Table> tile(ctx);
  if (region) {
    hooks.region_kernel_choice = canopy::detail::sat::testing_hooks::region_never;
    tile_ms = time([&] { tile.template build<In>(image.view(), w, h, c, single); });
    hooks.region_kernel_choice = canopy::detail::sat::testing_hooks::region_by_size;
  }

  // Checks: fast == baseline; box sums against brute force on the host.
  const auto a = fast.to_host(), b = base.to_host(), oa = off_fast.to_host();
  // CUB's tables (scans by key; sat_cub_baseline.cuh), from the same image and offsets, in its two
  // forms: columns through a permutation (strided), and columns as rows between two transposes.
  double cub_strided_ms = 0, cub_transposed_ms = 0;
  std::vector<Table> cub_strided, cub_transposed;
#if CANOPY_SAT_BENCH_CUB
  if (ctx.is_cuda()) {
    auto run_cub = [&](auto channels) {
      constexpr int C = decltype(channels)::value;
      using scans = sat_cub::two_scans<In, Table, C>;
      const std::size_t px = std::size_t(w) * h;
      canopy::buffer<typename scans::value> rows(ctx, px), scratch(ctx, px), out(ctx, px);
      scans s(ctx, image.data(), w, h, oa.empty() ? nullptr : oa.data(), rows.data(), scratch.data(), out.data());
      auto fetch = [&](std::vector<Table>& dst) {
        dst.resize(n);
        canopy::copy(ctx, canopy::span<const Table>(reinterpret_cast<const Table*>(out.data()), n, out.view().space()),
                     canopy::host_span(dst.data(), n));
        ctx.synchronize();
        out.fill_bytes(0);  // the next form must write every entry itself
      };
      cub_strided_ms = time([&] { s.run_strided(); });
      fetch(cub_strided);
      cub_transposed_ms = time([&] { s.run_transposed(); });
      fetch(cub_transposed);
    };
    if (c == 1) run_cub(std::integral_constant<int, 1>{});
    else if (c == 4) run_cub(std::integral_constant<int, 4>{});
    else fail(std::string(name) + ": no CUB baseline for " + std::to_string(c) + " channels");
  }
#endif
  // NPP's integral image (sat_npp_baseline.cuh): u8 -> 32-bit, 1 channel, or 4 split into planes.
  double npp_ms = 0, npp_bytes = 0;
  std::string npp_name;
  std::size_t bad_npp = 0;
#if CANOPY_SAT_BENCH_NPP
  if constexpr (std::is_same_v<In, std::uint8_t> && std::is_same_v<Table, std::uint32_t>) {
    if (ctx.is_cuda() && (c == 1 || c == 4)) {
      sat_npp::integral npp(ctx, image.data(), w, h, c);
      npp_ms = time([&] { npp.run(); });
      npp_bytes = npp.bytes();
      npp_name = npp.name();
      const auto t = npp.tables().to_host();  // planar, exclusive: npp.index(x, y, ch) holds S(x, y, ch)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          for (int ch = 0; ch < c; ++ch)
            if (std::uint32_t(t[npp.index(x, y, ch)]) != std::uint32_t(b[(std::size_t(y) * w + x) * c + ch])) ++bad_npp;
      if (bad_npp) fail(std::string(name) + ": NPP's table differs from two-pass in " + std::to_string(bad_npp) + " entries");
    }
  }
#endif
  double max_abs = 1;
  for (std::size_t i = 0; i < n; ++i) max_abs = std::max(max_abs, std::fabs(double(b[i])));
  const double tol = std::is_floating_point_v<Table> ? 8.0 * double(std::numeric_limits<Table>::epsilon()) * (w + h + 64) * max_abs : 0.0;
  // Entries of a table (read back; empty: not built) further than tol from the baseline's.
  auto differing = [&](const std::vector<Table>& t, const std::string& what) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < t.size(); ++i)
      if (std::fabs(double(t[i]) - double(b[i])) > tol) ++count;
    if (count) fail(std::string(name) + ": " + what + " differs from two-pass in " + std::to_string(count) + " entries");
    return count;
  };
  // The same for a kept table.
  auto kept_differing = [&](const canopy::summed_area_table<Table>& t, const char* what) {
    std::vector<Table> k(n);
    canopy::copy(ctx, t.table(), canopy::host_span(k.data(), k.size()));
    ctx.synchronize();
    return differing(k, what);
  };
  const std::size_t bad = differing(a, "single pass");
  const std::size_t bad_cub = differing(cub_strided, "CUB's strided table") + differing(cub_transposed, "CUB's transposed table");
  // The ratio is taken against CUB's faster form.
  const double cub_ms = cub_strided_ms > 0 ? std::min(cub_strided_ms, cub_transposed_ms) : 0.0;
  const std::size_t bad_kept = kept_differing(kept, "kept single pass");
  const std::size_t bad_tile = region ? kept_differing(tile, "tile kernel") : 0;
  const std::size_t bad_direct = quads ? kept_differing(direct, "R8 built directly") : 0;
  canopy::sat_view<Table> v{a.data(), oa.empty() ? nullptr : oa.data(), w, h, c};
  for (int k = 0; k < 8; ++k) {
    const int x0 = int(rng() % unsigned(w)), y0 = int(rng() % unsigned(h));
    const int x1 = std::min(w - 1, x0 + int(rng() % 200)), y1 = std::min(h - 1, y0 + int(rng() % 200));
    for (int ch = 0; ch < c; ++ch) {
      double exact = 0;
      for (int y = y0; y <= y1; ++y)
        for (int x = x0; x <= x1; ++x) exact += double(img[(std::size_t(y) * w + x) * c + ch]);
      const double got = double(v.box_sum(x0, y0, x1, y1, ch));
      const double bound = std::is_floating_point_v<Table> ? 4 * tol + 1e-5 * exact : 0.0;
      if (std::fabs(got - exact) > bound) fail(std::string(name) + ": box sum " + std::to_string(got) + " vs " + std::to_string(exact));
    }
  }

  const double bytes = double(n) * (sizeof(In) + sizeof(Table));
  const double fast_gbps = bytes / fast_ms * 1e-6, base_gbps = bytes / base_ms * 1e-6, kept_gbps = bytes / kept_ms * 1e-6;
  // A build of `ms` that moves `moved` bytes, as a fraction of the copy bandwidth.
  auto of_copy = [&](double ms, double moved) { return moved / ms * 1e-6 / copy_gbps; };
  std::printf("%-16s %5dx%-5d single_pass %8.3f ms %7.1f GB/s (%5.1f%% of copy %7.1f GB/s; fill %7.1f GB/s) | kept %8.3f ms (%5.1f%%) | two_pass %8.3f ms %7.1f GB/s | %.2fx\n",
              name, w, h, fast_ms, fast_gbps, 100.0 * fast_gbps / copy_gbps, copy_gbps, write_gbps, kept_ms,
              100.0 * kept_gbps / copy_gbps, base_ms, base_gbps, base_ms / fast_ms);
  if (cub_ms > 0)
    std::printf("%-16s %5dx%-5d   (CUB scans by key: strided %8.3f ms, transposed %8.3f ms, the faster %5.1f%% of copy; kept single pass %.2fx faster)\n",
                name, w, h, cub_strided_ms, cub_transposed_ms, 100.0 * of_copy(cub_ms, bytes), cub_ms / kept_ms);
  if (npp_ms > 0)
    std::printf("%-16s %5dx%-5d   (NPP %s: %8.3f ms, %5.1f%% of copy; kept single pass %.2fx faster)\n", name, w, h,
                npp_name.c_str(), npp_ms, 100.0 * of_copy(npp_ms, npp_bytes), npp_ms / kept_ms);
  if (quads)
    std::printf("%-16s %5dx%-5d   (as RGBA8 quads; R8 directly: kept %8.3f ms, %5.1f%% of copy; single_pass %8.3f ms, %5.1f%%)\n",
                name, w, h, direct_ms, 100.0 * of_copy(direct_ms, bytes), direct_single_ms,
                100.0 * of_copy(direct_single_ms, bytes));
  if (region)
    std::printf("%-16s %5dx%-5d   (region kernel; the tile kernel, kept: %8.3f ms, %5.1f%% of copy)\n", name, w, h, tile_ms,
                100.0 * of_copy(tile_ms, bytes));
  const auto num = canopy_bench::json_number;
  std::ostringstream r;
  r << "{\"primitive\": \"sat\", \"case\": \"" << name << "\", \"width\": " << w << ", \"height\": " << h
    << ", \"channels\": " << c << ", \"bytes_moved\": " << std::size_t(bytes) << ", \"single_pass_ms\": " << num(fast_ms)
    << ", \"single_pass_gbps\": " << num(fast_gbps) << ", \"two_pass_ms\": " << num(base_ms) << ", \"two_pass_gbps\": " << num(base_gbps)
    << ", \"copy_gbps\": " << num(copy_gbps) << ", \"fill_gbps\": " << num(write_gbps) << ", \"single_pass_fraction_of_copy\": " << num(fast_gbps / copy_gbps)
    << ", \"speedup_over_two_pass\": " << num(base_ms / fast_ms) << ", \"kept_single_pass_ms\": " << num(kept_ms)
    << ", \"kept_fraction_of_copy\": " << num(kept_gbps / copy_gbps)
    << ", \"kernel\": \"" << (region ? "region" : quads ? "tile, R8 as RGBA8 quads" : ctx.is_cuda() ? "tile" : "host") << "\"";
  if (quads)
    r << ", \"r8_direct_kept_ms\": " << num(direct_ms) << ", \"r8_direct_fraction_of_copy\": " << num(of_copy(direct_ms, bytes))
      << ", \"r8_direct_single_pass_ms\": " << num(direct_single_ms);
  if (region)
    r << ", \"tile_kernel_kept_ms\": " << num(tile_ms) << ", \"tile_kernel_fraction_of_copy\": " << num(of_copy(tile_ms, bytes));
  if (cub_ms > 0)
    r << ", \"cub_strided_ms\": " << num(cub_strided_ms) << ", \"cub_transposed_ms\": " << num(cub_transposed_ms)
      << ", \"cub_ms\": " << num(cub_ms) << ", \"cub_fraction_of_copy\": " << num(of_copy(cub_ms, bytes))
      << ", \"kept_speedup_over_cub\": " << num(cub_ms / kept_ms);
  if (npp_ms > 0)
    r << ", \"npp\": \"" << npp_name << "\", \"npp_integral_ms\": " << num(npp_ms) << ", \"npp_fraction_of_copy\": " << num(of_copy(npp_ms, npp_bytes))
      << ", \"kept_speedup_over_npp\": " << num(npp_ms / kept_ms);
  r << ", \"checked\": " << (bad == 0 && bad_kept == 0 && bad_tile == 0 && bad_cub == 0 && bad_npp == 0 && bad_direct == 0 ? "true" : "false") << "}";
  records.push_back(r.str());
}

void bench_dof(canopy::context& ctx, const timer_median& time, int w, int h, canopy::dof_kernel kernel) {
  const std::size_t n = std::size_t(w) * h;
  std::vector<std::uint32_t> colour(n);
  std::vector<float> depth(n);
  std::mt19937 rng(5);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const std::size_t i = std::size_t(y) * w + x;
      colour[i] = (rng() | 0x01010101u);
      // Depth variety: a near band, an in-focus band, a far gradient.
      depth[i] = x < w / 5 ? 0.8f : (x < 2 * w / 5 ? 4.0f : 4.0f + 40.0f * float(y) / float(h));
    }
  canopy::buffer<std::uint32_t> c(ctx, n), out(ctx, n);
  canopy::buffer<float> d(ctx, n);
  c.assign(colour);
  d.assign(depth);
  canopy::depth_of_field dof(ctx);
  canopy::dof_options o;
  o.lens.focus_distance_m = 4.0f;
  o.lens.f_number = 1.8f;
  // The sensor width scales with the image width, so a CoC is as many pixels at every size as at
  // 4K (36 mm, a full-frame sensor, at 3840): at the --quick size the far gradient then still
  // reaches the ~34-px CoC it has at 4K instead of ~1 px, and the blur check below has pixels to
  // check. At 3840 this is exactly the default 36 mm.
  o.lens.sensor_width_mm = 36.0f * float(w) / 3840.0f;
  o.kernel = kernel;
  const double total_ms = time([&] { dof.apply(c.view(), d.view(), w, h, out.view(), o); });
  canopy::stage_timer timer(ctx);
  std::vector<double> coc_ms, near_ms, sat_ms, filter_ms;
  for (int i = 0; i < time.reps; ++i) {
    timer.begin_frame();
    dof.apply(c.view(), d.view(), w, h, out.view(), o, &timer);
    timer.end_frame();
    const auto& t = timer.wait_latest();
    coc_ms.push_back(t.stage_ms("dof.coc"));
    near_ms.push_back(t.stage_ms("dof.near"));
    sat_ms.push_back(t.stage_ms("dof.sat"));
    filter_ms.push_back(t.stage_ms("dof.filter"));
  }
  const auto med = canopy_bench::median;
  // Check: in-focus pixels unchanged, and the output differs from the input where it is blurred.
  const auto got = out.to_host();
  std::size_t blurred = 0, changed = 0, focus_bad = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 2 * w / 5 + 64; x < w; ++x) {
      const std::size_t i = std::size_t(y) * w + x;
      const float coc = std::fabs(canopy::coc_diameter_px(o.lens, depth[i], w));
      if (coc < 1.0f && got[i] != colour[i]) ++focus_bad;
      if (coc >= 4.0f) ++blurred, changed += got[i] != colour[i];
    }
  if (focus_bad) fail("dof: " + std::to_string(focus_bad) + " in-focus pixels changed");
  // Without blurred pixels the second check would pass whatever the filter did.
  if (blurred == 0) fail("dof: no checked pixel has a CoC >= 4 px, so the blur check cannot run");
  if (changed < blurred * 9 / 10) fail("dof: only " + std::to_string(changed) + " of " + std::to_string(blurred) + " blurred pixels changed");
  const bool checked = focus_bad == 0 && blurred > 0 && changed >= blurred * 9 / 10;
  const char* kname = kernel == canopy::dof_kernel::box ? "box" : "polygon";
  std::printf("dof %-8s %5dx%-5d total %7.3f ms (coc %.3f, near %.3f, sat %.3f, filter %.3f)\n", kname, w, h, total_ms,
              med(coc_ms), med(near_ms), med(sat_ms), med(filter_ms));
  const auto num = canopy_bench::json_number;
  std::ostringstream r;
  r << "{\"primitive\": \"dof\", \"kernel\": \"" << kname << "\", \"width\": " << w << ", \"height\": " << h
    << ", \"total_ms\": " << num(total_ms) << ", \"coc_ms\": " << num(med(coc_ms)) << ", \"near_ms\": " << num(med(near_ms))
    << ", \"sat_ms\": " << num(med(sat_ms))
    << ", \"filter_ms\": " << num(med(filter_ms)) << ", \"checked\": " << (checked ? "true" : "false") << "}";
  records.push_back(r.str());
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: canopy-sat-bench [--backend host|cuda|auto] [--quick] [--reps N] [--size WxH]... [--only T]\n"
      "                        [--region-plan RH:NS:D] [--r8-quads auto|always|never] [--out file.json]\n"
      "  --size WxH  time the SAT at these sizes instead of 1080p, 4K and 8K (repeatable; no depth of field)\n"
      "  --only T    only this table build: rgba8, rgba32f or r8 (no depth of field)\n"
      "  --region-plan RH:NS:D  the region kernels' rows a region, carry slots (2-4) and staging rows (1-3)\n"
      "  --r8-quads auto|always|never  R8 tables as RGBA8 quads: by the size rule (default), wherever the width\n"
      "              allows, or never (where quads run, R8 built directly is timed beside them)\n"
      "  --help      print this and exit\n";
  canopy::backend_request request = canopy::backend_request::automatic;
  std::string out_path;
  bool quick = false;
  int reps = 25;
  std::vector<std::pair<int, int>> only_sizes;  // --size: these instead of the default sizes, SAT only
  std::string only;                             // --only: one table build, SAT only
  int plan[3] = {0, 0, 0};                      // --region-plan
  int quad_choice = canopy::detail::sat::testing_hooks::region_by_size;  // --r8-quads
  try {
    canopy_bench::command_line cl(argc, argv, "canopy-sat-bench");
    while (cl.next()) {
      if (cl.is("--help") || cl.is("-h")) {
        std::fputs(usage, stdout);
        return 0;
      } else if (cl.is("--backend")) request = canopy::parse_backend_request(cl.value(), "--backend");
      else if (cl.is("--out")) out_path = cl.value();
      else if (cl.is("--reps")) reps = cl.int_value(1);
      else if (cl.is("--quick")) quick = true;
      else if (cl.is("--size")) {
        const std::string v = cl.value();
        int w = 0, h = 0;
        char tail = 0;
        if (std::sscanf(v.c_str(), "%dx%d%c", &w, &h, &tail) != 2 || w < 1 || h < 1 || w > 65536 || h > 65536)
          throw std::invalid_argument("canopy-sat-bench: --size wants WIDTHxHEIGHT (1 to 65536 each), got '" + v + "'");
        only_sizes.push_back({w, h});
      } else if (cl.is("--only")) {
        only = cl.value();
        if (only != "rgba8" && only != "rgba32f" && only != "r8")
          throw std::invalid_argument("canopy-sat-bench: --only wants rgba8, rgba32f or r8, got '" + only + "'");
      } else if (cl.is("--region-plan")) {
        const std::string v = cl.value();
        char tail = 0;
        if (std::sscanf(v.c_str(), "%d:%d:%d%c", &plan[0], &plan[1], &plan[2], &tail) != 3 || plan[0] < 1 || plan[0] > 257 ||
            plan[1] < 2 || plan[1] > 4 || plan[2] < 1 || plan[2] > 3)
          throw std::invalid_argument("canopy-sat-bench: --region-plan wants RH:NS:D (RH 1 to 257, NS 2 to 4, D 1 to 3), got '" +
                                      v + "'");
      } else if (cl.is("--r8-quads")) {
        const std::string v = cl.value();
        if (v == "auto") quad_choice = canopy::detail::sat::testing_hooks::region_by_size;
        else if (v == "always") quad_choice = canopy::detail::sat::testing_hooks::region_always;
        else if (v == "never") quad_choice = canopy::detail::sat::testing_hooks::region_never;
        else throw std::invalid_argument("canopy-sat-bench: --r8-quads wants auto, always or never, got '" + v + "'");
      } else cl.refuse_unknown();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n%s", e.what(), usage);
    return canopy_bench::exit_bad_command_line;
  }
  try {
    std::string why;
    if (request == canopy::backend_request::cuda && !canopy::cuda_usable(&why)) {
      std::printf("canopy-sat-bench: skipped, CUDA backend unusable: %s\n", why.c_str());
      return 77;
    }
    canopy::context ctx(request);
    std::printf("canopy-sat-bench on %s\n", ctx.description().c_str());
    if (quick) reps = std::min(reps, 3);
    const timer_median time{ctx, reps};
    std::vector<std::pair<int, int>> sizes = {{1920, 1080}, {3840, 2160}, {7680, 4320}};
    if (quick) sizes = {{67, 33}, {257, 129}};
    if (!only_sizes.empty()) sizes = only_sizes;
    auto& hooks = canopy::detail::sat::testing();
    hooks.region_rows = plan[0];
    hooks.region_slots = plan[1];
    hooks.region_stage_rows = plan[2];
    hooks.quad_choice = quad_choice;
    for (auto [w, h] : sizes) {
      if (only.empty() || only == "rgba8") bench_sat<std::uint8_t, std::uint32_t>(ctx, time, "rgba8->u32", w, h, 4);
      if (only.empty() || only == "rgba32f") bench_sat<float, float>(ctx, time, "rgba32f->f32", w, h, 4);
      if (only.empty() || only == "r8") bench_sat<std::uint8_t, std::uint32_t>(ctx, time, "r8->u32", w, h, 1);
    }
    const int dw = quick ? 131 : 3840, dh = quick ? 77 : 2160;
    if (only_sizes.empty() && only.empty()) {
      bench_dof(ctx, time, dw, dh, canopy::dof_kernel::box);
      bench_dof(ctx, time, dw, dh, canopy::dof_kernel::polygon);
    }

    const std::string commit = canopy_bench::commit_id();
    std::ostringstream j;
    j << "{\n  \"benchmark\": \"canopy-sat-bench\",\n  \"primitive\": [\"sat\", \"dof\"],\n  \"commit\": \""
      << canopy_bench::json_escape(commit) << "\",\n  \"device\": \"" << canopy_bench::json_escape(ctx.description()) << "\",\n  \"backend\": \""
      << canopy::to_string(ctx.backend_kind()) << "\",\n  \"repetitions\": " << reps
      << ",\n  \"timing\": \"median after 3 warm-up runs; CUDA events on CUDA\",\n";
    if (plan[0]) j << "  \"region_plan\": \"" << plan[0] << ":" << plan[1] << ":" << plan[2] << "\",\n";
    j << "  \"records\": [\n";
    for (std::size_t i = 0; i < records.size(); ++i) j << "    " << records[i] << (i + 1 < records.size() ? ",\n" : "\n");
    j << "  ]\n}\n";
    if (!out_path.empty()) {
      std::ofstream f(out_path);
      f << j.str();
      if (!f) {
        std::fprintf(stderr, "canopy-sat-bench: cannot write %s\n", out_path.c_str());
        return 1;
      }
    } else {
      std::fputs(j.str().c_str(), stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "canopy-sat-bench: %s\n", e.what());
    return 1;
  }
  if (!all_ok) return 1;
  std::printf("canopy-sat-bench: ok\n");
  return 0;
}
