// bench/primitives/bench_segmented.cu — segmented sort of u32 keys with fixed segment sizes
// 16/256/4096 and a log-normal mix of sizes in [1, 4096], against cub::DeviceSegmentedSort::SortKeys
// (std::sort per segment on the host backend). CUB's time is the faster of its two entry points.
#include "bench_util.cuh"

#include <algorithm>
#include <cmath>
#include <random>

#include <canopy/core/segmented_sort.hpp>

#if CANOPY_BENCH_CUB
#include <cub/device/device_segmented_sort.cuh>
#endif

namespace canopy_bench {
namespace {

//! Segment offsets covering [0, n): fixed length `length`, or (length == 0) log-normal lengths
//! (median e^4 ≈ 55, sigma 1.5) clamped to [1, 4096]. Deterministic for a seed.
std::vector<std::uint32_t> make_offsets(std::size_t n, std::size_t length, std::uint64_t seed) {
  std::vector<std::uint32_t> off{0};
  if (length) {
    for (std::size_t b = length; b < n; b += length) off.push_back(static_cast<std::uint32_t>(b));
  } else {
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> dist(4.0, 1.5);
    std::size_t b = 0;
    while (b < n) {
      const double d = std::clamp(std::round(dist(rng)), 1.0, 4096.0);
      b = std::min(n, b + static_cast<std::size_t>(d));
      if (b < n) off.push_back(static_cast<std::uint32_t>(b));
    }
  }
  if (n) off.push_back(static_cast<std::uint32_t>(n));
  return off;
}

void run_segmented_sort(env& e, std::size_t n, result& r, std::size_t length) {
  using K = std::uint32_t;
  canopy::context& ctx = e.ctx();
  const std::vector<std::uint32_t> host_offsets = make_offsets(n, length, e.opts().seed + 6);
  const std::size_t segments = host_offsets.size() - 1;
  canopy::buffer<std::uint32_t> offsets(ctx, host_offsets.size());
  offsets.assign(host_offsets);
  canopy::buffer<K> pristine(ctx, n), keys(ctx, n), ref(ctx, n), ref_alt(ctx, n);
  fill_random(ctx, pristine.view(), e.opts().seed + 7);
  const canopy::span<const K> src = pristine.view();
  const canopy::span<const std::uint32_t> coff = offsets.view();
  r.canopy_ms = e.time_ms([&] { canopy::copy(ctx, src, keys.view()); },
                          [&] {
                            canopy::segmented_sort_keys(ctx, keys.view(), coff, canopy::less<K>{},
                                                        canopy::offsets_check::trusted);
                          });
  canopy::span<const K> ref_keys = ref.view();
  if (e.cuda()) {
#if CANOPY_BENCH_CUB
    // CUB's best of its two entry points: DoubleBuffer (in place, may end in the other buffer) and
    // keys_in -> keys_out (no restore needed). Which one is faster depends on the segment sizes.
    cub::DoubleBuffer<K> db(ref.data(), ref_alt.data());
    std::size_t bytes_db = 0, bytes_oop = 0;
    const auto call_db = [&](void* temp) {
      CANOPY_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(temp, bytes_db, db, static_cast<std::int64_t>(n),
                                                           static_cast<std::int64_t>(segments), offsets.data(),
                                                           offsets.data() + 1, ctx.stream()));
    };
    const auto call_oop = [&](void* temp) {
      CANOPY_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(temp, bytes_oop, pristine.data(), ref_alt.data(),
                                                           static_cast<std::int64_t>(n),
                                                           static_cast<std::int64_t>(segments), offsets.data(),
                                                           offsets.data() + 1, ctx.stream()));
    };
    call_db(nullptr);
    call_oop(nullptr);
    temp_storage temp(ctx, std::max(bytes_db, bytes_oop));
    const double oop_ms = e.time_ms([&] { call_oop(temp.data()); });
    if (!check_equal<K>(ctx, r, "sorted keys (CUB keys_in/keys_out)", keys.view(), ref_alt.view())) return;
    const double db_ms = e.time_ms(
        [&] {
          canopy::copy(ctx, src, ref.view());
          db = cub::DoubleBuffer<K>(ref.data(), ref_alt.data());
        },
        [&] { call_db(temp.data()); });
    ref_keys = canopy::span<const K>(db.Current(), n, canopy::memory_space::device);
    r.baseline = db_ms <= oop_ms ? "cub::DeviceSegmentedSort::SortKeys (DoubleBuffer)"
                                 : "cub::DeviceSegmentedSort::SortKeys (keys_in/keys_out)";
    r.baseline_ms = std::min(db_ms, oop_ms);
#endif
  } else {
    r.baseline = "std::sort per segment";
    r.baseline_ms = e.time_ms([&] { canopy::copy(ctx, src, ref.view()); },
                              [&] {
                                for (std::size_t s = 0; s < segments; ++s)
                                  std::sort(ref.data() + host_offsets[s], ref.data() + host_offsets[s + 1]);
                              });
  }
  r.note = std::to_string(segments) + " segments";
  check_equal<K>(ctx, r, "sorted keys", keys.view(), ref_keys);
  finish_keys(e, r);
}

std::size_t segmented_bytes(std::size_t n) { return 6 * n * 4; }

}  // namespace

void register_segmented_sort(std::vector<variant>& v) {
  for (std::size_t length : {16, 256, 4096})
    v.push_back({"segmented_sort_u32_" + std::to_string(length), "segmented_sort", segmented_bytes,
                 [length](env& e, std::size_t n, result& r) { run_segmented_sort(e, n, r, length); }});
  v.push_back({"segmented_sort_u32_lognormal", "segmented_sort", segmented_bytes,
               [](env& e, std::size_t n, result& r) { run_segmented_sort(e, n, r, 0); }});
}

}  // namespace canopy_bench
