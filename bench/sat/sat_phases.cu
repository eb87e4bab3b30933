// canopy-sat-phases: a measuring harness for the single-pass SAT kernel (not a benchmark of the
// public API; canopy-sat-bench is that). It launches template variants of
// detail::sat::sat_single_pass_kernel directly:
//   prefetch-diag   - the persistent prefetching kernel, tiles in anti-diagonal order, polling every
//                     lane of a look-back window (main's RGBA8 path at 789441f: the reference)
//   prefetch-raster - the same with tiles in raster order (the library's order before 2026-11-22)
//   prefetch-lean   - prefetch-diag with lean polling (look_back_poll::lean; the library's RGBA8 path)
//   tile-diag       - one tile per block from the counter, anti-diagonal order, all lanes polling
//                     (main's RGBA32F path at 789441f: the reference)
//   tile-raster     - the same in raster order
//   tile-lean       - tile-diag with lean polling (the library's RGBA32F path)
//   prefetch-tagged, tile-tagged - prefetch-lean / tile-lean with tagged descriptor words
//                     (look_back_protocol::tagged: {value, status} in one 64-bit word, no flags, no
//                     fences), the whole descriptor region cleared by a memset before each build
//   prefetch-epoch, tile-epoch - the same, but the scratch is kept and each build takes a new
//                     epoch: only the tile counter is cleared per build
//   prefetch-deferred - prefetch-epoch with deferred stores: each tile's table values wait in shared
//                     memory and warps 2 and 3 store them during the next tile's look-backs
//   loop-deferred   - the same persistent blocks without the prefetch (loads straight from global
//                     memory at the start of each tile), which leaves room for two blocks per SM
//                     with 16-byte pixels (the library's RGBA32F path)
//   DIAG-*-no-look-back, DIAG-*-no-stores - prefetch-epoch / loop-deferred with every look-back
//                     skipped (carries taken as zero) or with no table stores: WRONG tables, timed
//                     and not checked, to see what the look-backs and the write stream cost
// For RGBA32F the prefetch variants copy each warp row with 512 contiguous bytes per cp.async
// instruction (prefetch_slot); the library does not take them (prefetch-epoch for RGBA32F measured
// against tile-epoch in session 7, docs/sat.md).
// (Variants measured with this harness and dropped, docs/sat.md: a band-walking mode at 295b3dd,
// batched / lane-parallel look-backs at 82c9229; release / acquire flags, registers capped for 3
// blocks per SM, the tile kept in shared memory with its prefixes computed twice for 3 or 4 blocks
// per SM, and a __nanosleep backoff while polling at 79676a8; tagged descriptor words at 0b4ae8b,
// of which the epoch form was taken by summed_area_table. Persistent variants are launched plainly
// here, not cooperatively as in the library. Add a template variant to the kernel
// and a case here to measure the next idea the same way.)
// Each variant is checked exactly (u32) or within the float bound (f32) against a CPU reference at
// odd and large sizes, timed (median of 25 CUDA-event runs after 3 warm-ups, flag memset included)
// against a device-to-device copy of a table-sized buffer, and, in a Measure build of the same
// variant, its per-tile phase stamps (clock64 / globaltimer, see detail::sat::phase_stamp) are
// summarised: where a tile's time goes. Each kernel's registers, spills and blocks per SM are
// printed once.
// Usage: canopy-sat-phases [--small | --big] [variant,variant,...]  (a list limits the variants
// timed at 1080p, 4K and 8K; the odd sizes check all).
#include "common/bench_common.hpp"

#include <canopy/core/config.hpp>
#include <canopy/structures/detail/sat_kernels.cuh>
#include <canopy/core/detail/resident_launch.cuh>
#include <canopy/structures/detail/sat_scratch.cuh>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace k = canopy::detail::sat;

namespace {

int g_sms = 0;
bool g_ok = true;
// CANOPY_SAT_PHASES_COOPERATIVE=1: persistent variants launched as the library does (cooperative
// launch, largest shared-memory carveout) instead of a plain launch.
// 2: cooperative launch only; 3: plain launch with the largest carveout.
int g_cooperative = 0;

enum class variant {
  prefetch_diagonal,
  prefetch_raster,
  prefetch_lean,
  tile_diagonal,
  tile_raster,
  tile_lean,
  prefetch_tagged,
  prefetch_epoch,
  tile_tagged,
  tile_epoch,
  prefetch_deferred,
  loop_deferred,
  diag_prefetch_no_look_back,
  diag_prefetch_no_stores,
  diag_loop_no_look_back,
  diag_loop_no_stores,
  last = diag_loop_no_stores
};
const char* name_of(variant v) {
  switch (v) {
    case variant::prefetch_diagonal: return "prefetch-diag";
    case variant::prefetch_raster: return "prefetch-raster";
    case variant::prefetch_lean: return "prefetch-lean";
    case variant::tile_diagonal: return "tile-diag";
    case variant::tile_raster: return "tile-raster";
    case variant::tile_lean: return "tile-lean";
    case variant::prefetch_tagged: return "prefetch-tagged";
    case variant::prefetch_epoch: return "prefetch-epoch";
    case variant::tile_tagged: return "tile-tagged";
    case variant::tile_epoch: return "tile-epoch";
    case variant::prefetch_deferred: return "prefetch-deferred";
    case variant::loop_deferred: return "loop-deferred";
    case variant::diag_prefetch_no_look_back: return "DIAG-prefetch-epoch-no-look-back";
    case variant::diag_prefetch_no_stores: return "DIAG-prefetch-epoch-no-stores";
    case variant::diag_loop_no_look_back: return "DIAG-loop-deferred-no-look-back";
    case variant::diag_loop_no_stores: return "DIAG-loop-deferred-no-stores";
  }
  return "?";
}
bool prefetches(variant v) {
  return v == variant::prefetch_diagonal || v == variant::prefetch_raster || v == variant::prefetch_lean ||
         v == variant::prefetch_tagged || v == variant::prefetch_epoch || v == variant::prefetch_deferred ||
         v == variant::diag_prefetch_no_look_back || v == variant::diag_prefetch_no_stores;
}
//! Diagnostic variants (tables wrong by design: timed, not checked).
bool diagnostic(variant v) {
  return v == variant::diag_prefetch_no_look_back || v == variant::diag_prefetch_no_stores ||
         v == variant::diag_loop_no_look_back || v == variant::diag_loop_no_stores;
}

template <class In, class Table, int C>
struct runner {
  int w, h;
  const In* image;
  Table* table;
  Table* offset;
  unsigned char* scratch = nullptr;
  std::size_t scratch_bytes = 0;
  unsigned long long* stamps = nullptr;
  std::size_t stamp_tiles = 0;
  unsigned epoch = 0;  // epoch variants: the last build's epoch

  template <bool Prefetch, bool Measure, k::tile_order Order, k::look_back_poll Poll,
            k::look_back_protocol Protocol = k::look_back_protocol::flags, bool Epoch = false, bool Deferred = false,
            int Diag = 0>
  unsigned launch(cudaStream_t s, unsigned long long* st) {
    constexpr int TR = k::tile_rows;
    constexpr bool tag = Protocol == k::look_back_protocol::tagged;
    const int tiles_x = (w + k::tile_cols - 1) / k::tile_cols;
    const int tiles_y = (h + TR - 1) / TR;
    const std::size_t tiles = std::size_t(tiles_x) * tiles_y;
    const auto layout = k::scratch_layout::of<Table, C, tag>(tiles);
    bool fresh = false;
    if (layout.total_bytes > scratch_bytes) {
      if (scratch) CANOPY_CUDA_CHECK(cudaFree(scratch));
      scratch_bytes = layout.total_bytes;
      CANOPY_CUDA_CHECK(cudaMalloc(&scratch, scratch_bytes));
      fresh = true;
    }
    if constexpr (Epoch) {
      // A new epoch per build, the library's rule (advance_epoch).
      if (canopy::detail::advance_epoch(epoch, fresh)) CANOPY_CUDA_CHECK(cudaMemsetAsync(scratch, 0, scratch_bytes, s));
      // the counter, only where the mode reads it (the library's rule, dispatch_single_pass)
      if (!(Prefetch || Deferred)) CANOPY_CUDA_CHECK(cudaMemsetAsync(scratch, 0, sizeof(unsigned), s));
    } else {
      CANOPY_CUDA_CHECK(cudaMemsetAsync(scratch, 0, layout.zeroed_bytes, s));
    }
    k::tile_descriptors<Table> d = k::carve_descriptors<Table, C>(scratch, layout);
    d.epoch = Epoch ? epoch : 0;
    d.stamps = st;
    auto kernel = k::sat_single_pass_kernel<In, Table, C, Prefetch, Measure, Order, Poll, Protocol, Deferred, Diag>;
    constexpr bool persistent = Prefetch || Deferred;
    const int dyn = k::persistent_dynamic_bytes<In, Table, C, Prefetch, Deferred>();
    constexpr bool lean = Poll == k::look_back_poll::lean;
    static int per_sm = -1;
    if (per_sm < 0) {
      CANOPY_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, std::max(dyn, 1)));
      CANOPY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, k::block_threads, dyn));
      cudaFuncAttributes fa;
      CANOPY_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
      std::printf("  [kernel %s%s%s%s%s: %d registers, %zu B local (spills), %zu B static shared, %d B dynamic, %d blocks/SM]\n",
                  Prefetch ? "prefetch" : "tile", Measure ? " measure" : "", lean ? " lean" : "", tag ? " tagged" : "",
                  Deferred ? " deferred" : "",
                  fa.numRegs, fa.localSizeBytes,
                  fa.sharedSizeBytes, dyn, per_sm);
    }
    std::size_t blocks = tiles;
    if (persistent) blocks = std::min<std::size_t>(tiles, std::size_t(per_sm) * g_sms);
    if (!persistent && canopy::sat_has_offset_v<Table>)
      k::sat_offset_kernel<In, Table><<<1, 256, 0, s>>>(image, offset, w, h, C);
    // Persistent variants as the library may launch them (sat.cu): cooperatively (switch 1, 2), with
    // the largest shared-memory carveout (1, 3).
    const bool cooperative = persistent && (g_cooperative == 1 || g_cooperative == 2);
    static bool carveout = false;  // per kernel instantiation
    if (persistent && (g_cooperative == 1 || g_cooperative == 3) && !carveout) {
      CANOPY_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
      carveout = true;
    }
    if (!cooperative)
      kernel<<<unsigned(blocks), k::block_threads, dyn, s>>>(image, table, w, h, offset, tiles_x, unsigned(tiles), d);
    else if (!canopy::detail::launch_cooperative(kernel, unsigned(blocks), k::block_threads, std::size_t(dyn), s,
                                                 "canopy-sat-phases cooperative launch", image, table, w, h, offset,
                                                 tiles_x, unsigned(tiles), d))
      throw std::runtime_error("cooperative launch refused");
    CANOPY_CUDA_CHECK(cudaGetLastError());
    stamp_tiles = tiles;
    return unsigned(per_sm);
  }

  template <bool Prefetch, k::tile_order Order, k::look_back_poll Poll = k::look_back_poll::all,
            k::look_back_protocol Protocol = k::look_back_protocol::flags, bool Epoch = false, bool Deferred = false,
            int Diag = 0>
  unsigned launch_measured(cudaStream_t s, bool measure) {
    return measure ? launch<Prefetch, true, Order, Poll, Protocol, Epoch, Deferred, Diag>(s, stamps)
                   : launch<Prefetch, false, Order, Poll, Protocol, Epoch, Deferred, Diag>(s, nullptr);
  }

  unsigned run(variant v, cudaStream_t s, bool measure) {
    using o = k::tile_order;
    constexpr auto lean = k::look_back_poll::lean;
    constexpr auto tagged_protocol = k::look_back_protocol::tagged;
    if constexpr (k::prefetch_units<In, C>() > 0) {
      switch (v) {
        case variant::prefetch_diagonal: return launch_measured<true, o::diagonal>(s, measure);
        case variant::prefetch_raster: return launch_measured<true, o::raster>(s, measure);
        case variant::prefetch_lean: return launch_measured<true, o::diagonal, lean>(s, measure);
        default: break;
      }
      if constexpr (sizeof(Table) == 4) {
        switch (v) {
          case variant::prefetch_tagged: return launch_measured<true, o::diagonal, lean, tagged_protocol>(s, measure);
          case variant::prefetch_epoch: return launch_measured<true, o::diagonal, lean, tagged_protocol, true>(s, measure);
          case variant::prefetch_deferred:
            return launch_measured<true, o::diagonal, lean, tagged_protocol, true, true>(s, measure);
          case variant::diag_prefetch_no_look_back:
            return launch_measured<true, o::diagonal, lean, tagged_protocol, true, false, 1>(s, measure);
          case variant::diag_prefetch_no_stores:
            return launch_measured<true, o::diagonal, lean, tagged_protocol, true, false, 2>(s, measure);
          default: break;
        }
      }
    }
    if constexpr (sizeof(Table) == 4) {
      switch (v) {
        case variant::loop_deferred:
          return launch_measured<false, o::diagonal, lean, tagged_protocol, true, true>(s, measure);
        case variant::diag_loop_no_look_back:
          return launch_measured<false, o::diagonal, lean, tagged_protocol, true, true, 1>(s, measure);
        case variant::diag_loop_no_stores:
          return launch_measured<false, o::diagonal, lean, tagged_protocol, true, true, 2>(s, measure);
        case variant::tile_tagged: return launch_measured<false, o::diagonal, lean, tagged_protocol>(s, measure);
        case variant::tile_epoch: return launch_measured<false, o::diagonal, lean, tagged_protocol, true>(s, measure);
        default: break;
      }
    }
    switch (v) {
      case variant::tile_raster: return launch_measured<false, o::raster>(s, measure);
      case variant::tile_lean: return launch_measured<false, o::diagonal, lean>(s, measure);
      default: return launch_measured<false, o::diagonal>(s, measure);
    }
  }
};

template <class T>
void fill_image(std::vector<T>& img, unsigned seed) {
  std::mt19937 rng(seed);
  for (auto& v : img) {
    if constexpr (std::is_floating_point_v<T>) v = 0.05f + float(rng() % 1000) / 1000.0f;
    else v = T(1 + rng() % 255);
  }
}

// Exact (u32, wrap-around) or double reference; returns the number of bad entries.
template <class In, class Table, int C>
std::size_t check(const std::vector<In>& img, const std::vector<Table>& got, Table off_dev[C], int w, int h) {
  const std::size_t row = std::size_t(w) * C;
  std::size_t bad = 0;
  if constexpr (std::is_integral_v<Table>) {
    std::vector<Table> above(row, 0);
    for (int y = 0; y < h; ++y) {
      Table acc[C] = {};
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < C; ++c) {
          const std::size_t i = std::size_t(x) * C + c;
          acc[c] += Table(img[std::size_t(y) * row + i]);
          above[i] += acc[c];
          if (got[std::size_t(y) * row + i] != above[i]) ++bad;
        }
    }
  } else {
    std::vector<double> above(row, 0), ref(std::size_t(w) * h * C);
    double max_abs = 1;
    for (int y = 0; y < h; ++y) {
      double acc[C] = {};
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < C; ++c) {
          const std::size_t i = std::size_t(x) * C + c;
          acc[c] += double(img[std::size_t(y) * row + i]) - double(off_dev[c]);
          above[i] += acc[c];
          ref[std::size_t(y) * row + i] = above[i];
          max_abs = std::max(max_abs, std::fabs(above[i]));
        }
    }
    const double tol = double(std::numeric_limits<float>::epsilon()) * (w + h + 64) * 4 * max_abs;
    for (std::size_t i = 0; i < ref.size(); ++i)
      if (!(std::fabs(double(got[i]) - ref[i]) <= tol)) ++bad;
  }
  return bad;
}

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, std::size_t(q * double(v.size())))];
}

void summarise(const char* label, const std::vector<unsigned long long>& st, std::size_t tiles) {
  using namespace k;
  auto at = [&](std::size_t t, int i) { return double(st[t * phase_stamps + i]); };
  double cyc = 0, ns = 0, g0 = 1e300, g1 = 0;
  for (std::size_t t = 0; t < tiles; ++t) {
    cyc += at(t, stamp_stored) - at(t, stamp_start);
    ns += at(t, stamp_global_end) - at(t, stamp_global_start);
    g0 = std::min(g0, at(t, stamp_global_start));
    g1 = std::max(g1, at(t, stamp_global_end));
  }
  const double cpns = ns > 0 ? cyc / ns : 1.98;  // SM cycles per ns (from the stamps themselves)
  struct ph { const char* name; int a, b; };
  const ph phases[] = {{"load wait (start->image in regs)", stamp_start, stamp_loaded},
                       {"scan (->barrier 1 passed)", stamp_loaded, stamp_barrier1},
                       {"row look-back (warp 0)", stamp_barrier1, stamp_rows_done},
                       {"corner look-back (warp 1)", stamp_barrier1, stamp_corner_done},
                       {"column look-back (warp 4)", stamp_barrier1, stamp_cols_done},
                       {"row aggregate published (warp 0)", stamp_barrier1, stamp_rows_published},
                       {"col aggregate published (warp 4)", stamp_barrier1, stamp_cols_published},
                       {"barrier1 -> barrier 2 passed", stamp_barrier1, stamp_barrier2},
                       {"stores (barrier 2 -> issued)", stamp_barrier2, stamp_stored},
                       {"tile total", stamp_start, stamp_stored}};
  std::printf("  phases %s: %zu tiles, kernel span %.1f us (first tile start to last tile end), %.3f cycles/ns\n", label,
              tiles, (g1 - g0) * 1e-3, cpns);
  for (const ph& p : phases) {
    std::vector<double> v;
    for (std::size_t t = 0; t < tiles; ++t)
      if (st[t * phase_stamps + p.b] != 0) v.push_back((at(t, p.b) - at(t, p.a)) / cpns * 1e-3);
    if (v.empty()) continue;
    double mean = 0;
    for (double x : v) mean += x;
    mean /= double(v.size());
    std::printf("    %-34s mean %7.2f us  p10 %7.2f  p50 %7.2f  p90 %7.2f  max %8.2f\n", p.name, mean, pct(v, 0.1),
                pct(v, 0.5), pct(v, 0.9), pct(v, 1.0));
  }
  // Start skew: when tiles start relative to the kernel's first tile (globaltimer).
  std::vector<double> starts;
  for (std::size_t t = 0; t < tiles; ++t) starts.push_back((at(t, stamp_global_start) - g0) * 1e-3);
  std::printf("    tile start times (us after first): p10 %.1f p50 %.1f p90 %.1f max %.1f\n", pct(starts, 0.1),
              pct(starts, 0.5), pct(starts, 0.9), pct(starts, 1.0));
}

template <class In, class Table, int C>
void run_case(const char* cname, int w, int h, const std::vector<variant>& vars, bool timing, bool measure) {
  const std::size_t n = std::size_t(w) * h * C;
  std::vector<In> img(n);
  fill_image(img, unsigned(w * 31 + h));
  In* d_img;
  Table *d_tab, *d_off, *d_copy;
  CANOPY_CUDA_CHECK(cudaMalloc(&d_img, n * sizeof(In)));
  CANOPY_CUDA_CHECK(cudaMalloc(&d_tab, n * sizeof(Table)));
  CANOPY_CUDA_CHECK(cudaMalloc(&d_copy, n * sizeof(Table)));
  CANOPY_CUDA_CHECK(cudaMalloc(&d_off, 4 * sizeof(Table)));
  CANOPY_CUDA_CHECK(cudaMemcpy(d_img, img.data(), n * sizeof(In), cudaMemcpyHostToDevice));
  cudaStream_t s;
  CANOPY_CUDA_CHECK(cudaStreamCreate(&s));
  double copy_gbps = 0;
  if (timing) {
    const double copy_ms = canopy_bench::median_ms_on_stream(s, 3, 25, {}, [&] { CANOPY_CUDA_CHECK(cudaMemcpyAsync(d_copy, d_tab, n * sizeof(Table), cudaMemcpyDeviceToDevice, s)); });
    copy_gbps = 2.0 * double(n * sizeof(Table)) / copy_ms * 1e-6;
  }
  std::vector<Table> got(n);
  for (variant v : vars) {
    // Prefetching variants need rows of whole 16-byte units (cudaMalloc'd images are aligned).
    constexpr int units = k::prefetch_units<In, C>();
    if (prefetches(v) && (units == 0 || (std::size_t(w) * C * sizeof(In)) % 16 != 0)) continue;
    runner<In, Table, C> r{w, h, d_img, d_tab, d_off};
    CANOPY_CUDA_CHECK(cudaMemset(d_tab, 0, n * sizeof(Table)));
    const unsigned per_sm = r.run(v, s, false);
    CANOPY_CUDA_CHECK(cudaStreamSynchronize(s));
    CANOPY_CUDA_CHECK(cudaMemcpy(got.data(), d_tab, n * sizeof(Table), cudaMemcpyDeviceToHost));
    Table off[4] = {};
    CANOPY_CUDA_CHECK(cudaMemcpy(off, d_off, 4 * sizeof(Table), cudaMemcpyDeviceToHost));
    const std::size_t bad = diagnostic(v) ? 0 : check<In, Table, C>(img, got, off, w, h);
    if (bad) g_ok = false;
    std::printf("%-13s %5dx%-5d %-8s %s", cname, w, h, name_of(v),
                diagnostic(v) ? "DIAG (not checked)" : bad ? "WRONG" : "exact/ok");
    if (bad) std::printf(" (%zu bad entries)", bad);
    if (timing) {
      const double ms = canopy_bench::median_ms_on_stream(s, 3, 25, {}, [&] { r.run(v, s, false); });
      const double gbps = double(n) * (sizeof(In) + sizeof(Table)) / ms * 1e-6;
      std::printf("  %.4f ms  %7.1f GB/s  %5.1f%% of copy (%.1f GB/s)  blocks/SM %u", ms, gbps, 100 * gbps / copy_gbps,
                  copy_gbps, per_sm);
    }
    std::printf("\n");
    if (measure) {
      const std::size_t tiles_max = std::size_t((w + k::tile_cols - 1) / k::tile_cols) * std::size_t((h + k::tile_rows - 1) / k::tile_rows);
      CANOPY_CUDA_CHECK(cudaMalloc(&r.stamps, tiles_max * k::phase_stamps * sizeof(unsigned long long)));
      for (int rep = 0; rep < 3; ++rep) {  // warm, then keep the last run's stamps
        CANOPY_CUDA_CHECK(cudaMemsetAsync(r.stamps, 0, tiles_max * k::phase_stamps * sizeof(unsigned long long), s));
        r.run(v, s, true);
      }
      const double mms = canopy_bench::median_ms_on_stream(s, 3, 9, {}, [&] { r.run(v, s, true); });
      CANOPY_CUDA_CHECK(cudaMemsetAsync(r.stamps, 0, tiles_max * k::phase_stamps * sizeof(unsigned long long), s));
      r.run(v, s, true);
      CANOPY_CUDA_CHECK(cudaStreamSynchronize(s));
      std::vector<unsigned long long> st(r.stamp_tiles * k::phase_stamps);
      CANOPY_CUDA_CHECK(cudaMemcpy(st.data(), r.stamps, st.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      CANOPY_CUDA_CHECK(cudaMemcpy(got.data(), d_tab, n * sizeof(Table), cudaMemcpyDeviceToHost));
      if (!diagnostic(v) && check<In, Table, C>(img, got, off, w, h)) {
        g_ok = false;
        std::printf("  measuring build WRONG\n");
      }
      const std::string label = std::string(cname) + " " + name_of(v) + " (measuring build " + std::to_string(mms) + " ms)";
      summarise(label.c_str(), st, r.stamp_tiles);
      CANOPY_CUDA_CHECK(cudaFree(r.stamps));
    }
    if (r.scratch) CANOPY_CUDA_CHECK(cudaFree(r.scratch));
  }
  CANOPY_CUDA_CHECK(cudaStreamDestroy(s));
  CANOPY_CUDA_CHECK(cudaFree(d_img));
  CANOPY_CUDA_CHECK(cudaFree(d_tab));
  CANOPY_CUDA_CHECK(cudaFree(d_copy));
  CANOPY_CUDA_CHECK(cudaFree(d_off));
}

//! The variants named in a comma-separated list; false if a name is unknown.
bool parse_variants(const std::string& list, std::vector<variant>& out) {
  for (const std::string& name : canopy_bench::split_list(list)) {
    bool found = false;
    for (int i = 0; i <= int(variant::last); ++i)
      if (name == name_of(variant(i))) {
        out.push_back(variant(i));
        found = true;
      }
    if (!found) return false;
  }
  return !out.empty();
}

std::vector<variant> only(const std::vector<variant>& want, const std::vector<variant>& filter) {
  if (filter.empty()) return want;
  std::vector<variant> out;
  for (variant v : want)
    if (std::find(filter.begin(), filter.end(), v) != filter.end()) out.push_back(v);
  return out;
}

}  // namespace

// CUDA failures throw canopy::cuda_error (CANOPY_CUDA_CHECK), reported below.
int main(int argc, char** argv) try {
  // --small: the odd sizes only; --big: the odd sizes, then 4K and 8K (timed, with phase stamps).
  // A comma-separated list of variant names limits the variants (the odd sizes still check all).
  bool small_only = false, big_only = false;
  std::vector<variant> filter;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--small" && !big_only) small_only = true;
    else if (a == "--big" && !small_only) big_only = true;
    else if (!filter.empty() || !parse_variants(a, filter)) {
      std::fprintf(stderr, "usage: canopy-sat-phases [--small | --big] [variant,variant,...]\n  variants:");
      for (int v = 0; v <= int(variant::last); ++v) std::fprintf(stderr, " %s", name_of(variant(v)));
      std::fprintf(stderr, "\n");
      return canopy_bench::exit_bad_command_line;
    }
  }
  if (const char* e = std::getenv("CANOPY_SAT_PHASES_COOPERATIVE")) g_cooperative = std::atoi(e);
  cudaDeviceProp p;
  CANOPY_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  g_sms = p.multiProcessorCount;
  std::printf("canopy-sat-phases on %s (%d SMs)\n", p.name, g_sms);
  const std::vector<variant> u8v = {variant::prefetch_diagonal, variant::prefetch_lean,   variant::prefetch_raster,
                                    variant::tile_diagonal,     variant::tile_lean,       variant::tile_raster,
                                    variant::prefetch_tagged,   variant::prefetch_epoch,  variant::tile_tagged,
                                    variant::tile_epoch,        variant::prefetch_deferred, variant::loop_deferred,
                                    variant::diag_prefetch_no_look_back, variant::diag_prefetch_no_stores,
                                    variant::diag_loop_no_look_back, variant::diag_loop_no_stores};
  const std::vector<variant> f32v = {variant::tile_diagonal, variant::tile_lean,   variant::prefetch_diagonal,
                                     variant::prefetch_lean, variant::tile_raster, variant::tile_tagged,
                                     variant::tile_epoch,    variant::prefetch_tagged, variant::prefetch_epoch,
                                     variant::prefetch_deferred, variant::loop_deferred,
                                     variant::diag_loop_no_look_back, variant::diag_loop_no_stores};
  const std::pair<int, int> odd[] = {{1, 1}, {4, 1}, {33, 31}, {36, 31}, {132, 33}, {1028, 67}, {260, 9000}};
  for (auto [w, h] : odd) {
    run_case<std::uint8_t, std::uint32_t, 4>("rgba8->u32", w, h, u8v, false, false);
    run_case<float, float, 4>("rgba32f->f32", w, h, f32v, false, false);
  }
  if (small_only) return g_ok ? 0 : 1;
  if (!big_only) run_case<std::uint8_t, std::uint32_t, 4>("rgba8->u32", 4096, 1023, u8v, false, false);
  for (auto [w, h] : {std::pair{1920, 1080}, std::pair{3840, 2160}, std::pair{7680, 4320}}) {
    const bool big = w >= 3840;
    if (big_only && !big) continue;
    run_case<std::uint8_t, std::uint32_t, 4>("rgba8->u32", w, h, only(u8v, filter), true, big);
    run_case<float, float, 4>("rgba32f->f32", w, h, only(f32v, filter), true, big);
  }
  std::printf(g_ok ? "canopy-sat-phases: ok\n" : "canopy-sat-phases: CHECK FAILED\n");
  return g_ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "canopy-sat-phases: %s\n", e.what());
  return 1;
}
