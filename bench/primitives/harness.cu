// bench/primitives/harness.cu — timing, copy bandwidth, the table and the JSON of canopy-bench.
#include "harness.hpp"

#include "common/bench_common.hpp"

#include <canopy/core/for_each.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace canopy_bench {

namespace {
struct copy_u64_fn {
  canopy::span<const std::uint64_t> src;
  canopy::span<std::uint64_t> dst;
  CANOPY_HD void operator()(std::size_t i) const { dst[i] = src[i]; }
};
}  // namespace

std::string size_label(std::size_t n) {
  if (n >= 1024 && (n & (n - 1)) == 0) {
    int k = 0;
    while ((std::size_t(1) << k) != n) ++k;
    return "2^" + std::to_string(k);
  }
  return std::to_string(n);
}

double env::time_ms(const std::function<void()>& restore, const std::function<void()>& body) {
  return median_ms(ctx_, opts_.warmup, opts_.runs, restore, body);
}

std::size_t env::memory_budget() const {
  if (ctx_.is_cuda()) return ctx_.device().global_memory_bytes / 10 * 8;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? std::size_t(pages) * std::size_t(page) / 2 : std::size_t(1) << 32;
}

void finish_bytes(env& e, result& r, double bytes) {
  r.ratio = r.canopy_ms > 0 ? r.baseline_ms / r.canopy_ms : 0;
  const double seconds = r.canopy_ms * 1e-3;
  r.rate = seconds > 0 ? bytes / seconds * 1e-9 : 0;
  r.rate_unit = "GB/s";
  r.copy_fraction = e.copy_gbps() > 0 ? r.rate / e.copy_gbps() : -1;
}

void finish_keys(env& e, result& r) {
  r.ratio = r.canopy_ms > 0 ? r.baseline_ms / r.canopy_ms : 0;
  const double seconds = r.canopy_ms * 1e-3;
  r.rate = seconds > 0 ? double(r.n) / seconds * 1e-9 : 0;
  r.rate_unit = "Gkeys/s";
  r.copy_fraction = -1;
}

bool& corrupt_output() {
  static bool corrupt = false;
  return corrupt;
}

void report_mismatch(result& r, const std::string& what) {
  r.state = result::status::mismatch;
  if (!r.note.empty()) r.note += "; ";
  r.note += what;
  std::cerr << "\n*** MISMATCH *** " << r.variant << " n=" << r.n << ": " << what << "\n";
}

double measure_copy_bandwidth(env& e, std::size_t bytes) {
  canopy::context& ctx = e.ctx();
  const std::size_t words = std::max<std::size_t>(bytes / 8, 1);
  canopy::buffer<std::uint64_t> src(ctx, words), dst(ctx, words);
  src.fill_bytes(0x5a);
  double ms = 0;
  if (ctx.is_cuda()) {
    ms = e.time_ms([&] { canopy::copy(ctx, canopy::span<const std::uint64_t>(src.view()), dst.view()); });
  } else {
    ms = e.time_ms([&] { canopy::for_each(ctx, words, copy_u64_fn{src.view(), dst.view()}); });
  }
  return ms > 0 ? 2.0 * double(words * 8) / (ms * 1e-3) * 1e-9 : 0;
}

std::string sanitise_device_name(const std::string& name) {
  std::string o;
  bool dash = false;
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      if (dash && !o.empty()) o += '-';
      o += static_cast<char>(std::tolower(u));
      dash = false;
    } else {
      dash = true;
    }
  }
  return o.empty() ? "unknown-device" : o;
}

void write_json(const std::string& path, const std::string& device, const std::string& commit, double copy_gbps,
                const std::vector<result>& results) {
  std::ostringstream js;
  js << "{\n  \"device\": \"" << json_escape(device) << "\",\n  \"commit\": \"" << json_escape(commit)
     << "\",\n  \"copy_gbps\": " << json_number(copy_gbps) << ",\n  \"results\": [";
  bool first = true;
  for (const result& r : results) {
    if (r.state != result::status::ok) continue;  // only measured, verified rows
    js << (first ? "\n" : ",\n") << "    {\"primitive\": \"" << json_escape(r.primitive) << "\", \"variant\": \""
       << json_escape(r.variant) << "\", \"n\": " << r.n << ", \"canopy_ms\": " << json_number(r.canopy_ms)
       << ", \"baseline\": \"" << json_escape(r.baseline) << "\", \"baseline_ms\": " << json_number(r.baseline_ms)
       << ", \"ratio\": " << json_number(r.ratio) << ", \"rate\": " << json_number(r.rate) << ", \"rate_unit\": \""
       << json_escape(r.rate_unit) << "\"}";
    first = false;
  }
  js << "\n  ]\n}\n";
  std::ofstream f(path);
  if (!f) throw canopy::error("canopy-bench: cannot open '" + path + "' for writing");
  f << js.str();
  if (!f.flush()) throw canopy::error("canopy-bench: writing '" + path + "' failed");
}

void print_table(const std::vector<result>& results, double copy_gbps) {
  std::printf("\ncopy bandwidth (device to device, read + write): %.1f GB/s\n\n", copy_gbps);
  std::printf("%-30s %7s %11s %11s %7s %10s %-8s %7s  %s\n", "variant", "n", "canopy ms", "base ms", "ratio",
              "rate", "unit", "%copy", "baseline / note");
  std::printf("%s\n", std::string(120, '-').c_str());
  for (const result& r : results) {
    const std::string n = size_label(r.n);
    switch (r.state) {
      case result::status::ok: {
        char pct[16] = "-";
        if (r.copy_fraction >= 0) std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * r.copy_fraction);
        std::printf("%-30s %7s %11.4f %11.4f %7.3f %10.2f %-8s %7s  %s\n", r.variant.c_str(), n.c_str(), r.canopy_ms,
                    r.baseline_ms, r.ratio, r.rate, r.rate_unit.c_str(), pct,
                    (r.baseline + (r.note.empty() ? "" : " [" + r.note + "]")).c_str());
        break;
      }
      case result::status::mismatch:
        std::printf("%-30s %7s  MISMATCH: %s\n", r.variant.c_str(), n.c_str(), r.note.c_str());
        break;
      case result::status::skipped:
        std::printf("%-30s %7s  skipped: %s\n", r.variant.c_str(), n.c_str(), r.note.c_str());
        break;
    }
  }
  std::printf("\nratio = baseline ms / canopy ms (> 1: canopy faster); rate and %%copy are canopy's.\n");
}

}  // namespace canopy_bench
