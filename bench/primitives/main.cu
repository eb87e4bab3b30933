// canopy-bench — every canopy primitive side by side with its CUB/Thrust twin, in one process.
//
//   canopy-bench [--backend auto|host|cuda] [--sizes 20,24,26,28] [--filter sort,scan_i32]
//                [--quick] [--runs 20] [--warmup 3] [--out path.json|-] [--commit sha] [--list]
//                [--corrupt-output]
//
// Exit status: 0 when every variant that ran matched its baseline; 1 on a mismatch or an error;
// 2 on a bad command line; 77 when --backend cuda is asked for and no device is usable (CTest
// reports the GPU smoke test as skipped then).
#include "harness.hpp"

#include "common/bench_common.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#if CANOPY_HAS_CUDA
#include <cuda_runtime.h>
#endif

#ifndef CANOPY_BENCH_RESULTS_DIR
#define CANOPY_BENCH_RESULTS_DIR "."
#endif

namespace {

using canopy_bench::options;

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: canopy-bench [options]\n"
               "  --backend B     auto | host | cuda (default: CANOPY_BACKEND, else auto)\n"
               "  --sizes LIST    comma-separated sizes: k or 2^k means 2^k elements (k <= 40), larger\n"
               "                  numbers are element counts (default 20,24,26,28)\n"
               "  --filter LIST   comma-separated substrings; runs the variants whose name contains one\n"
               "  --quick         tiny sizes (0, 1, 4097, 65537), 1 warm-up, 3 timed runs: a smoke test\n"
               "  --runs N        timed runs per side, median reported (default 20)\n"
               "  --warmup N      untimed runs per side first (default 3)\n"
               "  --out PATH      JSON file (default bench/results/<device>-<date>.json; '-' for none)\n"
               "  --commit SHA    commit recorded in the JSON (default: CANOPY_COMMIT, else configure time)\n"
               "  --seed N        random seed of the inputs\n"
               "  --list          print the variant names and exit\n"
               "  --corrupt-output  invert canopy's last element before each integer-array check (must fail)\n");
}

std::size_t parse_size(const std::string& text) {
  std::string t = text;
  bool power = false;
  if (t.rfind("2^", 0) == 0) t = t.substr(2), power = true;
  const std::uint64_t v = canopy_bench::parse_uint64(t, "canopy-bench", "--sizes");
  if (power || v <= 40) {
    if (v > 40) throw canopy_bench::bad_flag("canopy-bench: argument '--sizes': 2^" + t + " is too large");
    return std::size_t(1) << v;
  }
  return static_cast<std::size_t>(v);
}

#if CANOPY_HAS_CUDA
//! Gives the cached blocks of the context's CUDA pool back between variants, so that one variant's
//! large buffers do not crowd the next one out (the pool never releases memory by itself).
void trim_pool(canopy::context& ctx) {
  if (!ctx.is_cuda()) return;
  if (auto* pool = dynamic_cast<canopy::cuda_pool_resource*>(&ctx.resource())) {
    ctx.synchronize();
    CANOPY_CUDA_CHECK(cudaMemPoolTrimTo(pool->pool(), 0));
  }
}
#else
void trim_pool(canopy::context&) {}
#endif

}  // namespace

int main(int argc, char** argv) {
  options opts;
  std::optional<canopy::backend_request> request;
  bool list = false, sizes_given = false, runs_given = false, warmup_given = false;
  try {
    canopy_bench::command_line cl(argc, argv, "canopy-bench");
    while (cl.next()) {
      if (cl.is("--help") || cl.is("-h")) {
        usage(stdout);
        return 0;
      } else if (cl.is("--backend")) {
        request = canopy::parse_backend_request(cl.value(), "--backend");
      } else if (cl.is("--sizes")) {
        opts.sizes.clear();
        for (const std::string& s : canopy_bench::split_list(cl.value())) opts.sizes.push_back(parse_size(s));
        sizes_given = true;
      } else if (cl.is("--filter")) {
        opts.filters = canopy_bench::split_list(cl.value());
      } else if (cl.is("--quick")) {
        opts.quick = true;
      } else if (cl.is("--runs")) {
        opts.runs = cl.int_value(1, 100000);
        runs_given = true;
      } else if (cl.is("--warmup")) {
        opts.warmup = cl.int_value(0, 100000);
        warmup_given = true;
      } else if (cl.is("--out")) {
        opts.out = cl.value();
      } else if (cl.is("--commit")) {
        opts.commit = cl.value();
      } else if (cl.is("--seed")) {
        opts.seed = cl.uint64_value();
      } else if (cl.is("--corrupt-output")) {
        canopy_bench::corrupt_output() = true;
      } else if (cl.is("--list")) {
        list = true;
      } else {
        usage(stderr);
        cl.refuse_unknown();
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return canopy_bench::exit_bad_command_line;
  }
  if (opts.quick) {
    if (!sizes_given) opts.sizes = {0, 1, 4097, 65537};
    if (!runs_given) opts.runs = 3;
    if (!warmup_given) opts.warmup = 1;
  }
  if (opts.sizes.empty()) opts.sizes = {std::size_t(1) << 20, std::size_t(1) << 24, std::size_t(1) << 26,
                                        std::size_t(1) << 28};

  std::vector<canopy_bench::variant> all;
  canopy_bench::register_scan(all);
  canopy_bench::register_select(all);
  canopy_bench::register_sort_32(all);
  canopy_bench::register_sort_64(all);
  canopy_bench::register_merge_sort(all);
  canopy_bench::register_segmented_sort(all);
  canopy_bench::register_split(all);
  std::vector<canopy_bench::variant> chosen;
  for (const auto& v : all) {
    bool keep = opts.filters.empty();
    for (const auto& f : opts.filters) keep = keep || v.name.find(f) != std::string::npos;
    if (keep) chosen.push_back(v);
  }
  if (list) {
    for (const auto& v : chosen) std::printf("%s\n", v.name.c_str());
    return 0;
  }
  if (chosen.empty()) {
    std::fprintf(stderr, "canopy-bench: --filter matches no variant (see --list)\n");
    return canopy_bench::exit_bad_command_line;
  }

  if (request == canopy::backend_request::cuda) {
    std::string why;
    if (!canopy::cuda_usable(&why)) {
      std::fprintf(stderr, "canopy-bench: CUDA backend requested but unusable: %s\n", why.c_str());
      return 77;
    }
  }

  int failures = 0;
  try {
    canopy::context ctx{canopy::context_options{request}};
    canopy_bench::env e(ctx, opts);
    const std::string commit = canopy_bench::commit_id(opts.commit);
    std::fprintf(stderr, "canopy-bench: %s\ncanopy-bench: commit %s, %d timed runs (median) after %d warm-up\n",
                 ctx.description().c_str(), commit.c_str(), opts.runs, opts.warmup);

    // Copy bandwidth: 1 GiB each way on the GPU (well past L2), 256 MiB on the host, less for --quick.
    const std::size_t copy_bytes = opts.quick ? (std::size_t(16) << 20)
                                              : ctx.is_cuda() ? (std::size_t(1) << 30) : (std::size_t(256) << 20);
    e.set_copy_gbps(canopy_bench::measure_copy_bandwidth(e, copy_bytes));
    trim_pool(ctx);
    std::fprintf(stderr, "canopy-bench: copy bandwidth %.1f GB/s (read + write)\n", e.copy_gbps());

    // The JSON is rewritten after every row, so a run cut short (a time limit) keeps what it measured.
    const std::string device = ctx.device().name;
    const std::string json_path =
        opts.out == "-" ? std::string()
        : opts.out.empty()
            ? std::string(CANOPY_BENCH_RESULTS_DIR) + "/" + canopy_bench::sanitise_device_name(device) + "-" +
                  canopy_bench::utc_date() + ".json"
            : opts.out;

    std::vector<canopy_bench::result> results;
    const std::size_t total = chosen.size() * opts.sizes.size();
    std::size_t step = 0;
    for (const auto& v : chosen) {
      for (std::size_t n : opts.sizes) {
        ++step;
        std::fprintf(stderr, "[%zu/%zu] %s n=%s\n", step, total, v.name.c_str(), canopy_bench::size_label(n).c_str());
        canopy_bench::result r;
        r.primitive = v.primitive;
        r.variant = v.name;
        r.n = n;
        const std::size_t need = v.bytes_needed(n);
        if (need > e.memory_budget()) {
          r.state = canopy_bench::result::status::skipped;
          r.note = "needs " + std::to_string(need >> 20) + " MiB, budget " +
                   std::to_string(e.memory_budget() >> 20) + " MiB";
        } else {
          try {
            const int unheld = canopy_bench::unheld_timings();
            v.run(e, n, r);
            if (canopy_bench::unheld_timings() != unheld)
              r.note += std::string(r.note.empty() ? "" : "; ") +
                        "a side's stream hold timed out (it waits on the host inside): timed without the hold";
          } catch (const std::exception& ex) {
            r.state = canopy_bench::result::status::mismatch;
            r.note = std::string("error: ") + ex.what();
            std::fprintf(stderr, "\n*** ERROR *** %s n=%zu: %s\n", v.name.c_str(), n, ex.what());
          }
          trim_pool(ctx);
        }
        if (r.state == canopy_bench::result::status::mismatch) ++failures;
        results.push_back(r);
        if (!json_path.empty()) canopy_bench::write_json(json_path, device, commit, e.copy_gbps(), results);
      }
    }

    canopy_bench::print_table(results, e.copy_gbps());

    if (!json_path.empty()) std::printf("results written to %s\n", json_path.c_str());
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "canopy-bench: %s\n", ex.what());
    return 1;
  }
  if (failures) {
    std::fprintf(stderr, "canopy-bench: %d FAILED row(s): canopy's result differs from the baseline or an error occurred\n",
                 failures);
    return 1;
  }
  return 0;
}
