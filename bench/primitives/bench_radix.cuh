// bench/primitives/bench_radix.cuh — the radix sort benchmark, instantiated per key/value type by
// bench_sort_32.cu and bench_sort_64.cu (CUB radix sort instantiations are slow to compile, so each
// file instantiates only what it benchmarks and the two build in parallel).
//
// Both sides are double-buffered (canopy::radix_sort_*_double_buffered and CUB's DoubleBuffer):
// neither pays for a final copy, and neither allocates in the timed region except canopy's own
// stream-ordered temporary storage from the context's pool. The pristine input is copied back
// before every run, outside the timed region.
#pragma once

#include "bench_util.cuh"

#include <algorithm>
#include <utility>

#if CANOPY_BENCH_CUB
#include <cub/device/device_radix_sort.cuh>
#endif

#include <canopy/core/radix_sort.hpp>

namespace canopy_bench {

//! No value: a keys-only sort.
struct no_value {};

//! Bytes a radix sort benchmark of n keys (and values) allocates: pristine, two double buffers per
//! side, plus about one more array of temporary storage per side.
template <class Key, class Value>
std::size_t radix_bytes(std::size_t n) {
  constexpr std::size_t per = sizeof(Key) + (std::is_same_v<Value, no_value> ? 0 : sizeof(Value));
  return n * per * 7;
}

template <class Key, class Value>
void run_radix_sort(env& e, std::size_t n, result& r, int end_bit, std::uint64_t key_mask) {
  constexpr bool pairs = !std::is_same_v<Value, no_value>;
  using V = std::conditional_t<pairs, Value, std::uint32_t>;  // placeholder type when keys-only
  canopy::context& ctx = e.ctx();
  const std::size_t nv = pairs ? n : 0;
  canopy::buffer<Key> pristine_k(ctx, n), ck(ctx, n), ck_alt(ctx, n), bk(ctx, n), bk_alt(ctx, n);
  canopy::buffer<V> pristine_v(ctx, nv), cv(ctx, nv), cv_alt(ctx, nv), bv(ctx, nv), bv_alt(ctx, nv);
  fill_random(ctx, pristine_k.view(), e.opts().seed + 3 + sizeof(Key), key_mask);
  if constexpr (pairs) fill_random(ctx, pristine_v.view(), e.opts().seed + 4);
  const auto restore = [&](canopy::buffer<Key>& k, canopy::buffer<V>& v) {
    canopy::copy(ctx, canopy::span<const Key>(pristine_k.view()), k.view());
    if constexpr (pairs) canopy::copy(ctx, canopy::span<const V>(pristine_v.view()), v.view());
  };

  bool canopy_in_alt = false;
  r.canopy_ms = e.time_ms([&] { restore(ck, cv); },
                          [&] {
                            if constexpr (pairs)
                              canopy_in_alt = canopy::radix_sort_pairs_double_buffered<Key, V>(
                                  ctx, ck.view(), ck_alt.view(), cv.view(), cv_alt.view(), 0, end_bit);
                            else
                              canopy_in_alt =
                                  canopy::radix_sort_keys_double_buffered<Key>(ctx, ck.view(), ck_alt.view(), 0, end_bit);
                          });
  canopy::span<const Key> canopy_keys = canopy_in_alt ? ck_alt.view() : ck.view();
  canopy::span<const V> canopy_values = canopy_in_alt ? cv_alt.view() : cv.view();

  canopy::span<const Key> ref_keys = bk.view();
  canopy::span<const V> ref_values = bv.view();
  if (e.cuda()) {
#if CANOPY_BENCH_CUB
    cub::DoubleBuffer<Key> dk(bk.data(), bk_alt.data());
    cub::DoubleBuffer<V> dv(bv.data(), bv_alt.data());
    std::size_t bytes = 0;
    const auto call = [&](void* temp) {
      if constexpr (pairs)
        CANOPY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, bytes, dk, dv, static_cast<std::int64_t>(n), 0,
                                                          end_bit, ctx.stream()));
      else
        CANOPY_CUDA_CHECK(
            cub::DeviceRadixSort::SortKeys(temp, bytes, dk, static_cast<std::int64_t>(n), 0, end_bit, ctx.stream()));
    };
    call(nullptr);
    temp_storage temp(ctx, bytes);
    r.baseline = pairs ? "cub::DeviceRadixSort::SortPairs" : "cub::DeviceRadixSort::SortKeys";
    if (end_bit != int(sizeof(Key) * 8)) r.baseline += " end_bit=" + std::to_string(end_bit);
    r.baseline_ms = e.time_ms(
        [&] {
          restore(bk, bv);
          dk = cub::DoubleBuffer<Key>(bk.data(), bk_alt.data());
          dv = cub::DoubleBuffer<V>(bv.data(), bv_alt.data());
        },
        [&] { call(temp.data()); });
    ref_keys = canopy::span<const Key>(dk.Current(), n, canopy::memory_space::device);
    if constexpr (pairs) ref_values = canopy::span<const V>(dv.Current(), n, canopy::memory_space::device);
#endif
  } else {
    r.baseline = pairs ? "std::stable_sort (pairs)" : "std::sort";
    std::vector<std::pair<Key, V>> tmp;
    r.baseline_ms = e.time_ms([&] { restore(bk, bv); },
                              [&] {
                                if constexpr (pairs) {
                                  tmp.resize(n);
                                  for (std::size_t i = 0; i < n; ++i) tmp[i] = {bk.data()[i], bv.data()[i]};
                                  std::stable_sort(tmp.begin(), tmp.end(),
                                                   [](const auto& a, const auto& b) { return a.first < b.first; });
                                  for (std::size_t i = 0; i < n; ++i) bk.data()[i] = tmp[i].first, bv.data()[i] = tmp[i].second;
                                } else {
                                  std::sort(bk.data(), bk.data() + n);
                                }
                              });
  }
  if (!check_equal<Key>(ctx, r, "sorted keys", canopy_keys, ref_keys)) return;
  if constexpr (pairs)
    if (!check_equal<V>(ctx, r, "values (stability)", canopy_values, ref_values)) return;
  finish_keys(e, r);
}

}  // namespace canopy_bench
