// bench/primitives/harness.hpp — canopy-bench: each canopy primitive side by side with its
// CUB/Thrust twin (or a std:: reference on the host backend), in one process, on the same inputs.
//
// A variant (e.g. "sort_u64_keys") is one function that, for a size n, makes random inputs,
// times canopy and the baseline (median of timed runs, inputs restored outside the timed region),
// checks canopy's output against the baseline's and fills a `result`. Variants register
// themselves per primitive family (bench_*.cu); main.cu runs them, prints the table and writes JSON.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

//! 1 in translation units that can call CUB (nvcc, CUDA build); the baseline is std:: otherwise.
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
#define CANOPY_BENCH_CUB 1
#else
#define CANOPY_BENCH_CUB 0
#endif

namespace canopy_bench {

//! Command-line choices.
struct options {
  std::vector<std::size_t> sizes;     //!< element counts
  std::vector<std::string> filters;   //!< substrings; a variant runs if its name contains any (empty: all)
  int warmup = 3;                     //!< untimed runs of each side before timing
  int runs = 20;                      //!< timed runs per side; the median is reported
  bool quick = false;
  std::string out;                    //!< JSON path ("" = bench/results/<device>-<date>.json, "-" = none)
  std::string commit;                 //!< overrides CANOPY_COMMIT and the configure-time commit
  std::uint64_t seed = 0x5eed2026;
};

//! One row of the table and of the JSON.
struct result {
  std::string primitive;          //!< "scan", "radix_sort", ...
  std::string variant;            //!< "scan_i32_inclusive", ...
  std::size_t n = 0;
  double canopy_ms = 0;
  std::string baseline;           //!< "cub::DeviceScan::InclusiveSum", "std::inclusive_scan", ...
  double baseline_ms = 0;
  double ratio = 0;               //!< baseline_ms / canopy_ms: > 1 means canopy is faster
  double rate = 0;                //!< canopy's rate in rate_unit
  std::string rate_unit;          //!< "GB/s" or "Gkeys/s"
  double copy_fraction = -1;      //!< canopy GB/s over the copy bandwidth; < 0 when not memory-bound
  std::string note;               //!< e.g. why a size was skipped
  enum class status { ok, mismatch, skipped } state = status::ok;
};

//! What a variant runs with.
class env {
 public:
  env(canopy::context& ctx, const options& opts) : ctx_(ctx), opts_(opts) {}
  canopy::context& ctx() { return ctx_; }
  const options& opts() const { return opts_; }
  bool cuda() const { return ctx_.is_cuda(); }
  //! Device-to-device copy bandwidth (bytes read + written per second, in GB/s), measured at start.
  double copy_gbps() const { return copy_gbps_; }
  void set_copy_gbps(double g) { copy_gbps_ = g; }

  //! Median milliseconds of `body` over opts().runs timed runs after opts().warmup untimed ones.
  //! `restore` runs before every run (warm-up or timed) outside the timed region, e.g. to copy the
  //! pristine input back for an in-place sort. CUDA: events on the context's stream; host: steady_clock.
  double time_ms(const std::function<void()>& restore, const std::function<void()>& body);
  double time_ms(const std::function<void()>& body) { return time_ms({}, body); }

  //! Bytes a variant may allocate: 80% of device memory (CUDA), or 1/2 of physical memory (host).
  std::size_t memory_budget() const;

 private:
  canopy::context& ctx_;
  const options& opts_;
  double copy_gbps_ = 0;
};

//! A benchmark variant. `run` fills `r` (variant, n, primitive are set by the caller).
struct variant {
  std::string name;
  std::string primitive;
  //! Bytes of device/host memory the variant allocates at size n (to skip sizes that do not fit).
  std::function<std::size_t(std::size_t n)> bytes_needed;
  std::function<void(env&, std::size_t n, result& r)> run;
};

//! Fills a memory-bound result's ratio, rate (GB/s) and copy fraction. `bytes` = the minimum bytes
//! the primitive must move (e.g. a scan reads n and writes n elements).
void finish_bytes(env& e, result& r, double bytes);
//! Fills a sort's ratio and rate (Gkeys/s: n keys over canopy's time).
void finish_keys(env& e, result& r);

//! True under --corrupt-output: check_equal() flips canopy's last output element before comparing,
//! so the run must report a mismatch (a self-test of the checks).
bool& corrupt_output();

//! Marks a result as mismatching; prints the details loudly to stderr.
void report_mismatch(result& r, const std::string& what);

//! Measures the device-to-device copy bandwidth (GB/s, bytes read + written) over `bytes` bytes.
double measure_copy_bandwidth(env& e, std::size_t bytes);

// Registration, one function per family, in table order.
void register_scan(std::vector<variant>& v);
void register_select(std::vector<variant>& v);
void register_sort_32(std::vector<variant>& v);
void register_sort_64(std::vector<variant>& v);
void register_merge_sort(std::vector<variant>& v);
void register_segmented_sort(std::vector<variant>& v);
void register_split(std::vector<variant>& v);

//! "2^k" for powers of two from 1024 on, else the decimal count.
std::string size_label(std::size_t n);
//! "nvidia-h100-80gb-hbm3": lower case, runs of other characters become one '-'.
std::string sanitise_device_name(const std::string& name);
//! Writes the JSON document. Throws canopy::error if the file cannot be written.
void write_json(const std::string& path, const std::string& device, const std::string& commit, double copy_gbps,
                const std::vector<result>& results);
//! Prints the ratio table to stdout.
void print_table(const std::vector<result>& results, double copy_gbps);

}  // namespace canopy_bench
