// bench/common/bench_common.hpp — what every canopy benchmark program shares: checked numeric
// flags, median timing, JSON text and the commit a result is recorded under. Header only; a
// program gets it by linking canopy_bench_common (bench/common/CMakeLists.txt), which also
// generates the build-time commit header.
//
// [SECTION] command line   parse_integer, parse_int, parse_uint64, split_list, command_line;
//                          bad_flag -> exit status 2
// [SECTION] timing         median, median_ms (context), median_ms_on_stream (raw CUDA stream)
// [SECTION] JSON           json_escape, json_number
// [SECTION] provenance     commit_id, utc_date
#pragma once

#include <canopy/core/config.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/error.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#if __has_include("canopy_bench_commit.hpp")
#include "canopy_bench_commit.hpp"  // generated at build time (bench/common/write_commit.cmake)
#endif
#ifndef CANOPY_BENCH_COMMIT
#define CANOPY_BENCH_COMMIT "unknown"
#endif

namespace canopy_bench {

// ---------------------------------------------------------------------------------------------
// [SECTION] command line

//! A malformed command line. Programs print what() and exit with exit_bad_command_line.
class bad_flag : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

//! Exit status of every benchmark program for a malformed command line.
constexpr int exit_bad_command_line = 2;

//! `text` as a base-10 integer in [lo, hi]. Anything else (empty, leading blanks, trailing
//! characters, out of range) is refused with bad_flag: "<program>: argument '<flag>': ...".
inline long long parse_integer(const std::string& text, const char* program, const char* flag, long long lo,
                               long long hi) {
  const auto refuse = [&](const std::string& why) {
    throw bad_flag(std::string(program) + ": argument '" + flag + "': '" + text + "' " + why);
  };
  const bool starts_well = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-');
  if (!starts_well) refuse("is not an integer");
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0') refuse("is not an integer");
  if (errno == ERANGE || v < lo || v > hi)
    refuse("is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

//! parse_integer() into an int in [lo, hi] (hi defaults to 1e6: counts of runs and pixels).
inline int parse_int(const std::string& text, const char* program, const char* flag, int lo, int hi = 1000000) {
  return int(parse_integer(text, program, flag, lo, hi));
}

//! `text` as a base-10 unsigned 64-bit integer (seeds, element counts): digits only.
inline std::uint64_t parse_uint64(const std::string& text, const char* program, const char* flag) {
  const auto refuse = [&](const std::string& why) {
    throw bad_flag(std::string(program) + ": argument '" + flag + "': '" + text + "' " + why);
  };
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    refuse("is not an unsigned integer");
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) refuse("does not fit in 64 bits");
  return std::uint64_t(v);
}

//! The non-empty items of a comma-separated list ("a,,b" -> {"a", "b"}).
inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

//! A comma-separated list of integers, each in [lo, hi] (parse_int); an empty list is refused.
inline std::vector<int> parse_int_list(const std::string& text, const char* program, const char* flag, int lo,
                                       int hi) {
  std::vector<int> out;
  for (const std::string& item : split_list(text)) out.push_back(parse_int(item, program, flag, lo, hi));
  if (out.empty()) throw bad_flag(std::string(program) + ": argument '" + flag + "': no value in '" + text + "'");
  return out;
}

//! A comma-separated list of names, each one of `known`; an unknown or missing name is refused
//! (a filter that matched nothing would otherwise run nothing and exit 0).
inline std::vector<std::string> parse_name_list(const std::string& text, const char* program, const char* flag,
                                                const std::vector<std::string>& known) {
  std::vector<std::string> out = split_list(text);
  std::string names;
  for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
  if (out.empty()) throw bad_flag(std::string(program) + ": argument '" + flag + "': no name given (one of " + names + ")");
  for (const std::string& item : out)
    if (std::find(known.begin(), known.end(), item) == known.end())
      throw bad_flag(std::string(program) + ": argument '" + flag + "': unknown name '" + item + "' (one of " + names + ")");
  return out;
}

//! Whether `name` is in `list`.
inline bool listed(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

//! Walks a program's arguments, flag by flag; every refusal is a bad_flag naming the program:
//!
//!   canopy_bench::command_line cl(argc, argv, "canopy-sat-bench");
//!   while (cl.next())
//!     if (cl.is("--reps")) reps = cl.int_value(1);
//!     else if (cl.is("--out")) out = cl.value();
//!     else cl.refuse_unknown();
class command_line {
 public:
  command_line(int argc, char** argv, const char* program) : argc_(argc), argv_(argv), program_(program) {}
  //! Moves to the next argument; false after the last.
  bool next() {
    if (++i_ >= argc_) return false;
    flag_ = argv_[i_];
    return true;
  }
  bool is(const char* name) const { return flag_ == name; }
  //! The current flag's value (the next argument), consumed.
  std::string value() {
    if (i_ + 1 >= argc_) throw bad_flag(std::string(program_) + ": argument '" + flag_ + "': needs a value");
    return argv_[++i_];
  }
  //! value() as an integer in [lo, hi] (parse_int).
  int int_value(int lo, int hi = 1000000) { return parse_int(value(), program_, flag_.c_str(), lo, hi); }
  //! value() as an unsigned 64-bit integer (parse_uint64).
  std::uint64_t uint64_value() { return parse_uint64(value(), program_, flag_.c_str()); }
  [[noreturn]] void refuse_unknown() const {
    throw bad_flag(std::string(program_) + ": unknown argument '" + flag_ + "'");
  }

 private:
  int argc_;
  char** argv_;
  const char* program_;
  int i_ = 0;
  std::string flag_;
};

// ---------------------------------------------------------------------------------------------
// [SECTION] timing

//! Median of `v` (the mean of the middle two for an even count); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

#if CANOPY_HAS_CUDA && !defined(__CUDACC__)
#error "bench_common.hpp times CUDA work with a kernel of its own: include it from .cu files (nvcc)"
#endif
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
namespace detail {
//! Holds its stream until the host writes a non-zero `release` (mapped pinned memory) or `timeout_ns`
//! pass (then *timed_out = 1), so that the work enqueued behind it is all queued before any of it runs.
template <int = 0>  // a template: defined in every .cu that includes this, without clashing
__global__ void hold_stream_kernel(const volatile int* release, int* timed_out, unsigned long long timeout_ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  while (*release == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > timeout_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(1000);
  }
}

//! Two mapped pinned words: the release flag and the timed-out flag of hold_stream_kernel.
struct stream_hold {
  int* host = nullptr;
  int* device = nullptr;
  stream_hold() {
    // Portable: one pair of words serves streams of any device (the pointer is the same under UVA).
    CANOPY_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host), 2 * sizeof(int),
                                    cudaHostAllocMapped | cudaHostAllocPortable));
    CANOPY_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), host, 0));
    clear_timed_out();  // pinned memory starts with whatever was there
  }
  ~stream_hold() { cudaFreeHost(host); }  // destructor: nothing to do about a failure
  stream_hold(const stream_hold&) = delete;
  stream_hold& operator=(const stream_hold&) = delete;
  //! Enqueues the hold; the previous one has ended (its run waited on its stop event, or it was
  //! released by the guard when its body threw).
  void hold(cudaStream_t stream) {
    reinterpret_cast<volatile int*>(host)[0] = 0;
    clear_timed_out();
    hold_stream_kernel<><<<1, 1, 0, stream>>>(device, device + 1, 100000000ull);
    CANOPY_CUDA_CHECK(cudaGetLastError());
  }
  void release() { reinterpret_cast<volatile int*>(host)[0] = 1; }
  bool timed_out() const { return reinterpret_cast<volatile int*>(host)[1] != 0; }
  void clear_timed_out() { reinterpret_cast<volatile int*>(host)[1] = 0; }
};
}  // namespace detail

//! How many median_ms_on_stream calls so far timed some runs without the stream hold (their body
//! waits on the host inside, or took over 100 ms to enqueue); a harness compares it before and after
//! a case to note it.
inline int& unheld_timings() {
  static int count = 0;
  return count;
}

//! Median milliseconds of body() on `stream` over `runs` runs (one pair of CUDA events around
//! each) after `warmup` untimed runs and a stream synchronisation. restore(), if set, runs before
//! every run, outside the timed region (e.g. to copy an in-place sort's input back).
//! Each timed run is enqueued behind a kernel that holds the stream until the host has enqueued
//! restore, the start event, body and the stop event (nvbench's "blocking kernel"): the events then
//! time the GPU's work only, not how fast the host enqueues it (allocation from the pool, launch
//! calls), for canopy and its baselines alike. A body that waits on the host inside (a synchronising
//! read-back, e.g. CUB's segmented sort without device-side launches) cannot run behind a hold: the
//! hold then times out (100 ms, not timed), and that run and the rest of this call are timed as
//! they come, host round trips included, which unheld_timings() counts. CANOPY_BENCH_HOLD=0 in the
//! environment turns the hold off (the timing of earlier sessions' files). restore() runs before
//! the hold, so a restore that waits on the host is harmless.
inline double median_ms_on_stream(cudaStream_t stream, int warmup, int runs, const std::function<void()>& restore,
                                  const std::function<void()>& body) {
  for (int i = 0; i < warmup; ++i) {
    if (restore) restore();
    body();
  }
  CANOPY_CUDA_CHECK(cudaStreamSynchronize(stream));
  struct event_pair {
    cudaEvent_t start = nullptr, stop = nullptr;
    event_pair() {
      CANOPY_CUDA_CHECK(cudaEventCreate(&start));
      CANOPY_CUDA_CHECK(cudaEventCreate(&stop));
    }
    ~event_pair() {
      cudaEventDestroy(start);  // destructor: nothing to do about a failure
      cudaEventDestroy(stop);
    }
    event_pair(const event_pair&) = delete;
    event_pair& operator=(const event_pair&) = delete;
  } ev;
  static const bool holding = [] {  // CANOPY_BENCH_HOLD=0: the old timing, for comparison
    const char* e = std::getenv("CANOPY_BENCH_HOLD");
    return !(e != nullptr && std::string(e) == "0");
  }();
  // One per program (pinned allocations are slow), made on first use; single-threaded callers.
  static detail::stream_hold* const gate = holding ? new detail::stream_hold : nullptr;
  //! Releases a held stream on every way out of a run, a throwing body() included.
  struct release_guard {
    detail::stream_hold* gate;
    ~release_guard() {
      if (gate) gate->release();
    }
  };
  std::vector<double> ms;
  bool hold_now = holding;
  for (int i = 0; i < std::max(runs, 1); ++i) {
    if (restore) restore();
    if (hold_now) gate->hold(stream);
    {
      release_guard released{hold_now ? gate : nullptr};
      CANOPY_CUDA_CHECK(cudaEventRecord(ev.start, stream));
      body();
      CANOPY_CUDA_CHECK(cudaEventRecord(ev.stop, stream));
    }
    CANOPY_CUDA_CHECK(cudaEventSynchronize(ev.stop));
    if (hold_now && gate->timed_out()) {  // the hold outlasted the enqueue: time the rest as it comes
      hold_now = false;
      ++unheld_timings();
      std::fprintf(stderr,
                   "note: the stream hold timed out (the call waits on the host inside, or takes over 100 ms to "
                   "enqueue); timed without the hold\n");
    }
    float t = 0;
    CANOPY_CUDA_CHECK(cudaEventElapsedTime(&t, ev.start, ev.stop));
    ms.push_back(t);
  }
  return median(ms);
}
#endif

//! Median milliseconds of body() over `runs` runs after `warmup` untimed ones; restore() as in
//! median_ms_on_stream. CUDA: events on ctx.stream(); host: steady_clock around each call (the
//! host backend returns when done).
inline double median_ms(canopy::context& ctx, int warmup, int runs, const std::function<void()>& restore,
                        const std::function<void()>& body) {
#if CANOPY_HAS_CUDA && defined(__CUDACC__)
  if (ctx.is_cuda()) {
    const double ms = median_ms_on_stream(ctx.stream(), warmup, runs, restore, body);
    ctx.synchronize();  // reports what the context's kernels found on the device (device_check)
    return ms;
  }
#endif
  for (int i = 0; i < warmup; ++i) {
    if (restore) restore();
    body();
  }
  ctx.synchronize();
  std::vector<double> ms;
  for (int i = 0; i < std::max(runs, 1); ++i) {
    if (restore) restore();
    const auto t0 = std::chrono::steady_clock::now();
    body();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(ms);
}

// ---------------------------------------------------------------------------------------------
// [SECTION] JSON

//! `s` as the inside of a JSON string: quote and backslash escaped, control characters as \u00XX.
inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(u));
      o += buf;
    } else {
      o += c;
    }
  }
  return o;
}

//! A JSON number with 6 significant digits; null for NaN and infinities (JSON has neither).
inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] provenance

//! The commit a result is recorded under: `given` (a --commit flag) when not empty, else the
//! CANOPY_COMMIT environment variable, else the source tree's commit when the program was built
//! (with "-dirty" where tracked files differed from it), else "unknown". A copy of the tree without
//! its current .git records a wrong or unknown commit: set CANOPY_COMMIT there.
inline std::string commit_id(const std::string& given = std::string()) {
  if (!given.empty()) return given;
  if (const char* c = std::getenv("CANOPY_COMMIT"); c && *c) return c;
  return CANOPY_BENCH_COMMIT;
}

//! Today's date in UTC, YYYY-MM-DD.
inline std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

}  // namespace canopy_bench
