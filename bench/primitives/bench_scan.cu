// bench/primitives/bench_scan.cu — scan (i32/i64, inclusive/exclusive) and reduce against
// cub::DeviceScan / cub::DeviceReduce (std::inclusive_scan / std::exclusive_scan / std::accumulate
// on the host backend).
#include "bench_util.cuh"

#include <numeric>

#include <canopy/core/scan.hpp>
#include <canopy/core/reduce.hpp>

#if CANOPY_BENCH_CUB
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#endif

namespace canopy_bench {
namespace {

template <class T, bool Inclusive>
void run_scan(env& e, std::size_t n, result& r) {
  canopy::context& ctx = e.ctx();
  canopy::buffer<T> in(ctx, n), out(ctx, n), ref(ctx, n);
  fill_random(ctx, in.view(), e.opts().seed);
  const canopy::span<const T> cin = in.view();
  out.fill_bytes(0);
  ref.fill_bytes(0x11);  // differs from out, so an output neither side wrote is caught

  r.canopy_ms = e.time_ms([&] {
    if constexpr (Inclusive) canopy::inclusive_scan(ctx, cin, out.view(), canopy::plus<T>{});
    else canopy::exclusive_scan(ctx, cin, out.view(), T(0), canopy::plus<T>{});
  });

  if (e.cuda()) {
#if CANOPY_BENCH_CUB
    std::size_t bytes = 0;
    const auto call = [&](void* temp) {
      if constexpr (Inclusive)
        CANOPY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, in.data(), ref.data(), n, ctx.stream()));
      else
        CANOPY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, bytes, in.data(), ref.data(), n, ctx.stream()));
    };
    call(nullptr);
    temp_storage temp(ctx, bytes);
    r.baseline = Inclusive ? "cub::DeviceScan::InclusiveSum" : "cub::DeviceScan::ExclusiveSum";
    r.baseline_ms = e.time_ms([&] { call(temp.data()); });
#endif
  } else {
    r.baseline = Inclusive ? "std::inclusive_scan" : "std::exclusive_scan";
    r.baseline_ms = e.time_ms([&] {
      if constexpr (Inclusive) std::inclusive_scan(in.data(), in.data() + n, ref.data());
      else std::exclusive_scan(in.data(), in.data() + n, ref.data(), T(0));
    });
  }
  check_equal<T>(ctx, r, "scan output", out.view(), ref.view());
  finish_bytes(e, r, 2.0 * double(n) * sizeof(T));  // read n, write n
}

void run_reduce_i32(env& e, std::size_t n, result& r) {
  using T = std::int32_t;
  canopy::context& ctx = e.ctx();
  canopy::buffer<T> in(ctx, n), out(ctx, 1), ref(ctx, 1);
  fill_random(ctx, in.view(), e.opts().seed + 1);
  const canopy::span<const T> cin = in.view();
  out.fill_bytes(0x22);
  ref.fill_bytes(0x33);
  r.canopy_ms = e.time_ms([&] { canopy::reduce(ctx, cin, out.view(), T(0), canopy::plus<T>{}); });
  if (e.cuda()) {
#if CANOPY_BENCH_CUB
    std::size_t bytes = 0;
    CANOPY_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, in.data(), ref.data(), n, ctx.stream()));
    temp_storage temp(ctx, bytes);
    r.baseline = "cub::DeviceReduce::Sum";
    r.baseline_ms = e.time_ms(
        [&] { CANOPY_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), bytes, in.data(), ref.data(), n, ctx.stream())); });
#endif
  } else {
    r.baseline = "std::accumulate";
    r.baseline_ms = e.time_ms([&] { ref.data()[0] = std::accumulate(in.data(), in.data() + n, T(0)); });
  }
  check_equal<T>(ctx, r, "reduce result", out.view(), ref.view());
  finish_bytes(e, r, double(n) * sizeof(T));  // read n
}

}  // namespace

void register_scan(std::vector<variant>& v) {
  v.push_back({"scan_i32_inclusive", "scan", [](std::size_t n) { return 3 * n * 4; },
               run_scan<std::int32_t, true>});
  v.push_back({"scan_i32_exclusive", "scan", [](std::size_t n) { return 3 * n * 4; },
               run_scan<std::int32_t, false>});
  v.push_back({"scan_i64_inclusive", "scan", [](std::size_t n) { return 3 * n * 8; },
               run_scan<std::int64_t, true>});
  v.push_back({"scan_i64_exclusive", "scan", [](std::size_t n) { return 3 * n * 8; },
               run_scan<std::int64_t, false>});
  v.push_back({"reduce_i32", "reduce", [](std::size_t n) { return n * 4; }, run_reduce_i32});
}

}  // namespace canopy_bench
