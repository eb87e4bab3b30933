// bench/primitives/bench_select.cu — select (stream compaction by a predicate) keeping 50% and 5%
// of random u32 values, against cub::DeviceSelect::If (std::copy_if on the host backend).
#include "bench_util.cuh"

#include <algorithm>

#include <canopy/core/compact.hpp>

#if CANOPY_BENCH_CUB
#include <cub/device/device_select.cuh>
#endif

namespace canopy_bench {
namespace {

//! Keeps x < threshold: with uniform u32 inputs, a fraction threshold / 2^32 is kept.
struct keep_below {
  std::uint32_t threshold;
  CANOPY_HD bool operator()(const std::uint32_t& x) const { return x < threshold; }
};

template <int PercentKept>
void run_select(env& e, std::size_t n, result& r) {
  using T = std::uint32_t;
  canopy::context& ctx = e.ctx();
  const keep_below pred{static_cast<std::uint32_t>((std::uint64_t(1) << 32) * PercentKept / 100)};
  canopy::buffer<T> in(ctx, n), out(ctx, n), ref(ctx, n);
  canopy::buffer<std::size_t> count(ctx, 1), ref_count(ctx, 1);
  fill_random(ctx, in.view(), e.opts().seed + 2);
  out.fill_bytes(0);
  ref.fill_bytes(0);
  count.fill_bytes(0xff);
  ref_count.fill_bytes(0xee);
  const canopy::span<const T> cin = in.view();

  r.canopy_ms = e.time_ms([&] { canopy::select_if(ctx, cin, out.view(), count.view(), pred); });
  if (e.cuda()) {
#if CANOPY_BENCH_CUB
    std::size_t bytes = 0;
    CANOPY_CUDA_CHECK(cub::DeviceSelect::If(nullptr, bytes, in.data(), ref.data(), ref_count.data(),
                                            static_cast<std::int64_t>(n), pred, ctx.stream()));
    temp_storage temp(ctx, bytes);
    r.baseline = "cub::DeviceSelect::If";
    r.baseline_ms = e.time_ms([&] {
      CANOPY_CUDA_CHECK(cub::DeviceSelect::If(temp.data(), bytes, in.data(), ref.data(), ref_count.data(),
                                              static_cast<std::int64_t>(n), pred, ctx.stream()));
    });
#endif
  } else {
    r.baseline = "std::copy_if";
    r.baseline_ms = e.time_ms([&] {
      ref_count.data()[0] = std::size_t(std::copy_if(in.data(), in.data() + n, ref.data(), pred) - ref.data());
    });
  }
  const std::size_t k = count.to_host()[0], k_ref = ref_count.to_host()[0];
  if (k != k_ref) {
    report_mismatch(r, "selected count: canopy " + std::to_string(k) + ", baseline " + std::to_string(k_ref));
    return;
  }
  if (!check_equal<T>(ctx, r, "selected elements", out.view().first(k), ref.view().first(k))) return;
  finish_bytes(e, r, double(n) * sizeof(T) + double(k) * sizeof(T));  // read n, write k
}

}  // namespace

void register_select(std::vector<variant>& v) {
  v.push_back({"select_u32_50", "select", [](std::size_t n) { return 3 * n * 4; }, run_select<50>});
  v.push_back({"select_u32_5", "select", [](std::size_t n) { return 3 * n * 4; }, run_select<5>});
}

}  // namespace canopy_bench
