// canopy-radix-tuning — sweeps the onesweep radix sort's tile shapes (items per thread, blocks per
// SM, kernel variant) against cub::DeviceRadixSort (DoubleBuffer) on the same inputs, in one
// process: the measurements behind radix_engine.cuh's onesweep_default per device class
// (docs/performance/sort.md). CUDA only. Each timing is the median of --runs CUDA-event runs after
// --warmup runs; the input is restored by a device copy outside the timed region. Keys are uniform
// random and non-zero; every variant's keys (and values) are compared with CUB's, and a mismatch
// makes the exit status 1. Every row is an LSD run (the "library LSD" row with the default shape);
// radix_sort_* takes the hybrid of radix_hybrid.cuh for 8-byte keys over 64-bit windows instead,
// which canopy-bench measures.
//
//   canopy-radix-tuning [--sizes 26,28] [--runs 20] [--warmup 3]
//                       [--filter u32_keys,u32_u32_pairs,u64_keys,u64_48bit_keys,u64_u32_pairs]
//                       [--shapes TEXT]   (only shapes whose label contains TEXT; CUB always runs)
#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/detail/radix_engine.cuh>

#include <cub/device/device_radix_sort.cuh>

#include "common/bench_common.hpp"
#include "common/bench_data.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace cd = canopy::detail;
using cd::no_value;

int g_runs = 20;
int g_warmup = 3;
std::string g_shapes;
bool g_failed = false;

//! One tile shape of onesweep_pass_kernel: items per thread, blocks per SM (register hint),
//! onesweep::variant bits, widest digit (make_digit_plan).
template <int Items, int MinBlocks, int Variant = 0, int MaxBits = 8>
struct tile {
  static constexpr int items = Items, min_blocks = MinBlocks, variant = Variant, max_bits = MaxBits;
};

std::string label_of(int items, int min_blocks, int variant, int max_bits) {
  std::string s = std::to_string(items) + "x" + std::to_string(min_blocks);
  if (variant & cd::onesweep::variant::stage_values) s += " staged-values";
  if (variant & cd::onesweep::variant::narrow_look_back) s += " narrow-look-back";
  if (max_bits > 8) s += " digits<=" + std::to_string(max_bits);
  return s;
}

//! Median of g_runs timed calls of `body` after g_warmup untimed ones; `restore` runs before each
//! call, outside the timed region.
template <class R, class F>
double median_ms(canopy::context& ctx, R&& restore, F&& body) {
  return canopy_bench::median_ms_on_stream(ctx.stream(), g_warmup, g_runs, restore, body);
}

//! One record type at one size: pristine input, canopy's and CUB's double buffers, CUB's time and
//! result (the reference every shape is compared with).
template <class K, class V>
struct sort_case {
  static constexpr bool pairs = !std::is_same_v<V, no_value>;
  using VB = std::conditional_t<pairs, V, std::uint32_t>;  // a buffer type for keys-only cases
  canopy::context& ctx;
  const char* name;
  int lg;
  int end_bit;
  std::size_t n;
  canopy::buffer<K> pristine_k, k, k_alt, ref_k, ref_k_alt;
  canopy::buffer<VB> pristine_v, v, v_alt, ref_v, ref_v_alt;
  const K* ref_keys = nullptr;
  const VB* ref_vals = nullptr;
  double cub_ms = 0, copy_ms = 0;
  double bytes = 0;  // the floor with 8-bit digits: one read of the keys (histogram), then per pass read + write of every record

  sort_case(canopy::context& c, const char* nm, int lg_, int end_bit_)
      : ctx(c), name(nm), lg(lg_), end_bit(end_bit_), n(std::size_t(1) << lg_),
        pristine_k(c, n), k(c, n), k_alt(c, n), ref_k(c, n), ref_k_alt(c, n),
        pristine_v(c, pairs ? n : 0), v(c, pairs ? n : 0), v_alt(c, pairs ? n : 0), ref_v(c, pairs ? n : 0),
        ref_v_alt(c, pairs ? n : 0) {
    const std::uint64_t key_mask = end_bit >= 64 ? ~0ull : (1ull << end_bit) - 1;
    canopy_bench::fill_random(ctx, pristine_k.view(), 1000 + lg + sizeof(K), key_mask);
    if constexpr (pairs) canopy_bench::fill_random(ctx, pristine_v.view(), 2000 + lg);
    bytes = floor_bytes(cd::lsd_passes(0, end_bit));

    cub::DoubleBuffer<K> dk(ref_k.data(), ref_k_alt.data());
    cub::DoubleBuffer<VB> dv(ref_v.data(), ref_v_alt.data());
    std::size_t temp_bytes = 0;
    const auto call = [&](void* temp) {
      if constexpr (pairs)
        CANOPY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, dk, dv, std::int64_t(n), 0, end_bit,
                                                          ctx.stream()));
      else
        CANOPY_CUDA_CHECK(
            cub::DeviceRadixSort::SortKeys(temp, temp_bytes, dk, std::int64_t(n), 0, end_bit, ctx.stream()));
    };
    call(nullptr);
    canopy::buffer<unsigned char> temp(ctx, temp_bytes);
    cub_ms = median_ms(
        ctx,
        [&] {
          restore(ref_k, ref_v);
          dk = cub::DoubleBuffer<K>(ref_k.data(), ref_k_alt.data());
          dv = cub::DoubleBuffer<VB>(ref_v.data(), ref_v_alt.data());
        },
        [&] { call(temp.data()); });
    ref_keys = dk.Current();
    ref_vals = dv.Current();
    copy_ms = median_ms(ctx, [] {}, [&] {
      CANOPY_CUDA_CHECK(cudaMemcpyAsync(k_alt.data(), pristine_k.data(), n * sizeof(K), cudaMemcpyDeviceToDevice,
                                        ctx.stream()));
    });
    std::printf("%-16s n=2^%d: copy %.4f ms (%.0f GB/s), CUB %.4f ms (%.1f Gkeys/s, %.0f GB/s at the floor of %.0f B/key)\n",
                name, lg, copy_ms, 2.0 * n * sizeof(K) / (copy_ms * 1e6), cub_ms, n / (cub_ms * 1e6),
                bytes / (cub_ms * 1e6), bytes / n);
  }

  double floor_bytes(int passes) const {
    return double(n) * (sizeof(K) + passes * 2.0 * (sizeof(K) + (pairs ? sizeof(V) : 0)));
  }

  void restore(canopy::buffer<K>& keys, canopy::buffer<VB>& vals) {
    CANOPY_CUDA_CHECK(cudaMemcpyAsync(keys.data(), pristine_k.data(), n * sizeof(K), cudaMemcpyDeviceToDevice,
                                      ctx.stream()));
    if constexpr (pairs)
      CANOPY_CUDA_CHECK(cudaMemcpyAsync(vals.data(), pristine_v.data(), n * sizeof(V), cudaMemcpyDeviceToDevice,
                                        ctx.stream()));
  }

  //! Times one shape (or, with Tile = void, the library's own choice for this device) and checks
  //! its output against CUB's.
  template <class Tile>
  void run(const std::string& label) {
    if (!g_shapes.empty() && label.find(g_shapes) == std::string::npos) return;
    cd::lsd_job<K, V> job;
    job.keys_in = k.data();
    job.keys[0] = k.data();
    job.keys[1] = k_alt.data();
    if constexpr (pairs) {
      job.vals_in = v.data();
      job.vals[0] = v.data();
      job.vals[1] = v_alt.data();
    }
    job.n = n;
    job.begin_bit = 0;
    job.end_bit = end_bit;
    job.kind = canopy::key_kind::unsigned_integer;
    job.first_dst = 1;  // as radix_sort_*_double_buffered: pass 0 writes the alternate buffer
    const double ms = median_ms(ctx, [&] { restore(k, v); }, [&] {
      if constexpr (std::is_void_v<Tile>)
        cd::lsd_run_cuda(ctx, job, "canopy-radix-tuning");
      else
        cd::lsd_run_cuda_shaped<K, V, Tile::items, Tile::min_blocks, Tile::variant, Tile::max_bits>(ctx, job);
    });
    int passes = 0;
    if constexpr (std::is_void_v<Tile>) passes = cd::lsd_passes(0, end_bit);
    else passes = cd::make_digit_plan(0, end_bit, Tile::max_bits).passes;
    const double run_bytes = floor_bytes(passes);  // this run's own floor (fewer passes with wider digits)
    const bool in_alt = passes % 2 == 1;
    bool bad = canopy_bench::first_difference(ctx, in_alt ? k_alt.data() : k.data(), ref_keys, n) != n;
    if constexpr (pairs) bad = bad || canopy_bench::first_difference(ctx, in_alt ? v_alt.data() : v.data(), ref_vals, n) != n;
    std::printf("%-16s n=2^%d %-28s %d passes %8.4f ms %6.2f Gkeys/s %5.0f GB/s %5.1f%% copy  CUB %8.4f ms  CUB/canopy %.3f %s\n",
                name, lg, label.c_str(), passes, ms, n / (ms * 1e6), run_bytes / (ms * 1e6),
                100.0 * (run_bytes / (2.0 * n * sizeof(K)) * copy_ms) / ms, cub_ms, cub_ms / ms, bad ? "MISMATCH" : "ok");
    if (bad) g_failed = true;
  }

  template <class... Tiles>
  void sweep() {
    const auto regime = cd::onesweep_regime_of(ctx.device());
    run<void>(regime == cd::onesweep_regime::bandwidth_bound ? "library LSD (bandwidth_bound)" : "library LSD (compute_bound)");
    (run<Tiles>(label_of(Tiles::items, Tiles::min_blocks, Tiles::variant, Tiles::max_bits)), ...);
  }
};

// Candidate shapes (session 8: the look-back width against the best shapes of earlier rounds;
// docs/performance/sort.md has the earlier sweeps). ptxas (sm_90, nvcc 13.0) spill stores: u64 keys
// 26x2 8 B (variant 0) / 28 B (narrow look-back) and 28x2 narrow 56 B, in the whole-key kernel only
// (digits straddling bit 32, the hybrid's bucket passes); u32/u32 pairs 24x2 staged + narrow 28 B,
// u64/u32 pairs 18x2 staged + narrow 36 B; 0 in every other shape here. Defaults: compute_bound
// (H200) 26x3, 26x2 narrow, 16x3, 18x2 narrow; bandwidth_bound (H100) 30x3, 26x2 narrow, 26x2,
// 18x2 narrow.
void sweep_u32_keys(canopy::context& ctx, int lg) {
  sort_case<std::uint32_t, no_value> c(ctx, "u32_keys", lg, 32);
  constexpr int N = cd::onesweep::variant::narrow_look_back;
  c.sweep<tile<30, 3>, tile<32, 3>, tile<30, 3, N>, tile<26, 3>, tile<26, 3, N>>();
}

void sweep_u32_u32_pairs(canopy::context& ctx, int lg) {
  constexpr int S = cd::onesweep::variant::stage_values;
  sort_case<std::uint32_t, std::uint32_t> c(ctx, "u32_u32_pairs", lg, 32);
  constexpr int N = cd::onesweep::variant::narrow_look_back;
  c.sweep<tile<22, 2, S>, tile<24, 2>, tile<20, 2, N>, tile<22, 2, N>, tile<24, 2, N>, tile<26, 2, N>,
          tile<22, 2, S | N>, tile<24, 2, S | N>>();
}

template <int EndBit>
void sweep_u64_keys(canopy::context& ctx, int lg) {
  sort_case<std::uint64_t, no_value> c(ctx, EndBit == 64 ? "u64_keys" : "u64_48bit_keys", lg, EndBit);
  constexpr int N = cd::onesweep::variant::narrow_look_back;
  c.sweep<tile<26, 2>, tile<24, 2, N>, tile<26, 2, N>, tile<28, 2, N>, tile<16, 3>, tile<16, 3, N>>();
}

void sweep_u64_u32_pairs(canopy::context& ctx, int lg) {
  constexpr int S = cd::onesweep::variant::stage_values;
  sort_case<std::uint64_t, std::uint32_t> c(ctx, "u64_u32_pairs", lg, 64);
  constexpr int N = cd::onesweep::variant::narrow_look_back;
  c.sweep<tile<18, 2>, tile<16, 2, N>, tile<18, 2, N>, tile<20, 2, N>, tile<18, 2, S | N>>();
}


}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes{26, 28};
  const std::vector<std::string> families = {"u32_keys", "u32_u32_pairs", "u64_keys", "u64_48bit_keys", "u64_u32_pairs"};
  std::vector<std::string> filter = families;
  try {
    canopy_bench::command_line cl(argc, argv, "canopy-radix-tuning");
    while (cl.next())
      if (cl.is("--sizes")) sizes = canopy_bench::parse_int_list(cl.value(), "canopy-radix-tuning", "--sizes", 1, 29);
      else if (cl.is("--runs")) g_runs = cl.int_value(1);
      else if (cl.is("--warmup")) g_warmup = cl.int_value(0);
      else if (cl.is("--filter")) filter = canopy_bench::parse_name_list(cl.value(), "canopy-radix-tuning", "--filter", families);
      else if (cl.is("--shapes")) g_shapes = cl.value();
      else cl.refuse_unknown();
  } catch (const canopy_bench::bad_flag& e) {
    std::fprintf(stderr,
                 "%s\nusage: canopy-radix-tuning [--sizes 26,28] [--runs 20] [--warmup 3] [--shapes TEXT]\n"
                 "       [--filter u32_keys,u32_u32_pairs,u64_keys,u64_48bit_keys,u64_u32_pairs]\n",
                 e.what());
    return canopy_bench::exit_bad_command_line;
  }
  try {
    canopy::context ctx(canopy::backend_request::cuda);
    const canopy::device_info& d = ctx.device();
    std::printf("%s\n", ctx.description().c_str());
    std::printf("peak DRAM %.0f GB/s, SM clock %.0f MHz: %.1f bytes per SM clock -> %s shapes; %d runs (median) after %d warm-up\n",
                d.memory_bandwidth / 1e9, d.clock_khz / 1e3, cd::memory_bytes_per_sm_clock(d),
                cd::onesweep_regime_of(d) == cd::onesweep_regime::bandwidth_bound ? "bandwidth_bound"
                                                                                   : "compute_bound",
                g_runs, g_warmup);
    for (int lg : sizes) {
      if (canopy_bench::listed(filter, "u32_keys")) sweep_u32_keys(ctx, lg);
      if (canopy_bench::listed(filter, "u32_u32_pairs")) sweep_u32_u32_pairs(ctx, lg);
      if (canopy_bench::listed(filter, "u64_keys")) sweep_u64_keys<64>(ctx, lg);
      if (canopy_bench::listed(filter, "u64_48bit_keys")) sweep_u64_keys<48>(ctx, lg);
      if (canopy_bench::listed(filter, "u64_u32_pairs")) sweep_u64_u32_pairs(ctx, lg);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "canopy-radix-tuning: %s\n", e.what());
    return 1;
  }
  if (g_failed) std::fprintf(stderr, "canopy-radix-tuning: a shape's output differed from CUB's\n");
  return g_failed ? 1 : 0;
}
