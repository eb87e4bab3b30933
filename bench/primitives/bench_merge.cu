// bench/primitives/bench_merge.cu — merge sort of u32 keys with a user comparator (a functor
// defined here, so neither side can specialise on a known operator) against
// cub::DeviceMergeSort::SortKeys (std::stable_sort on the host backend).
#include "bench_util.cuh"

#include <algorithm>

#include <canopy/core/merge_sort.hpp>

#if CANOPY_BENCH_CUB
#include <cub/device/device_merge_sort.cuh>
#endif

namespace canopy_bench {
namespace {

//! The user comparator: ascending u32.
struct user_less_u32 {
  CANOPY_HD bool operator()(const std::uint32_t& a, const std::uint32_t& b) const { return a < b; }
};

void run_merge_sort_u32(env& e, std::size_t n, result& r) {
  using K = std::uint32_t;
  canopy::context& ctx = e.ctx();
  canopy::buffer<K> pristine(ctx, n), keys(ctx, n), ref(ctx, n);
  fill_random(ctx, pristine.view(), e.opts().seed + 5);
  const canopy::span<const K> src = pristine.view();
  r.canopy_ms = e.time_ms([&] { canopy::copy(ctx, src, keys.view()); },
                          [&] { canopy::merge_sort_keys(ctx, keys.view(), user_less_u32{}); });
  if (e.cuda()) {
#if CANOPY_BENCH_CUB
    std::size_t bytes = 0;
    CANOPY_CUDA_CHECK(cub::DeviceMergeSort::SortKeys(nullptr, bytes, ref.data(), static_cast<std::int64_t>(n),
                                                     user_less_u32{}, ctx.stream()));
    temp_storage temp(ctx, bytes);
    r.baseline = "cub::DeviceMergeSort::SortKeys";
    r.baseline_ms = e.time_ms([&] { canopy::copy(ctx, src, ref.view()); },
                              [&] {
                                CANOPY_CUDA_CHECK(cub::DeviceMergeSort::SortKeys(
                                    temp.data(), bytes, ref.data(), static_cast<std::int64_t>(n), user_less_u32{},
                                    ctx.stream()));
                              });
#endif
  } else {
    r.baseline = "std::stable_sort";
    r.baseline_ms = e.time_ms([&] { canopy::copy(ctx, src, ref.view()); },
                              [&] { std::stable_sort(ref.data(), ref.data() + n, user_less_u32{}); });
  }
  check_equal<K>(ctx, r, "sorted keys", keys.view(), ref.view());
  finish_keys(e, r);
}

}  // namespace

void register_merge_sort(std::vector<variant>& v) {
  v.push_back({"merge_sort_u32", "merge_sort", [](std::size_t n) { return 5 * n * 4; }, run_merge_sort_u32});
}

}  // namespace canopy_bench
