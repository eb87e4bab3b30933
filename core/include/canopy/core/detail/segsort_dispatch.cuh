// canopy/core/detail/segsort_dispatch.cuh — launch sequence and tuning of segmented_sort on CUDA.
// Compiled only by nvcc; included from segmented_sort.hpp after offsets_check is defined.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/merge_dispatch.cuh>
#include <canopy/core/detail/segsort_kernels.cuh>

#include <cstddef>
#include <cstdint>
#include <string>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)

namespace canopy::detail {

//! Groups and items per thread of each size bin. Items are odd (conflict-free blocked shared
//! accesses) and capped so that a block's shared tile stays under 40 KiB. For 4-8 byte key + value:
//!   bin 0: 4 lanes x 5  (<= 20 keys, 8 segments per warp)   bin 1: 8 lanes x 9   (<= 72)
//!   bin 2: a warp x 9   (<= 288)                             bin 3: 128 threads x 9 (<= 1152)
//!   bin 4: 256 threads x 17 (<= 4352)                        bin 5: larger, one 256-thread block each
template <class Key, class Value, bool HasValues>
struct segsort_tuning {
  static constexpr int bytes = int(sizeof(Key) + (HasValues ? sizeof(Value) : 0));
  static constexpr int cap(int block, int nominal) {
    return nominal < merge_odd_floor(40960 / (block * bytes)) ? nominal : merge_odd_floor(40960 / (block * bytes));
  }
  static constexpr int small_block = 128;
  static constexpr int i0 = cap(small_block, 5), i1 = cap(small_block, 9), i2 = cap(small_block, 9),
                       i3 = cap(small_block, 9), i4 = cap(256, 17);
  static constexpr int g0 = 4, g1 = 8, g2 = 32, g3 = small_block, g4 = 256;
  static constexpr std::uint32_t upper[segsort_bins - 1] = {g0 * i0, g1 * i1, g2 * i2, g3 * i3, g4 * i4};
};

//! `Tune` (segsort_tuning's members) is a parameter so that benchmarks can compare bin layouts.
template <class Key, class Value, bool HasValues, class Tune = segsort_tuning<Key, Value, HasValues>, class Comp>
void segmented_sort_cuda(const char* function, context& ctx, Key* keys, Value* values, std::size_t n,
                         const std::uint32_t* offsets, std::size_t segments, Comp comp, offsets_check check,
                         Key* tmp_keys = nullptr, Value* tmp_values = nullptr) {
  using tune = Tune;
  cudaStream_t stream = ctx.stream();
  segsort_bin_bounds bounds{};
  std::size_t capacity[segsort_bins];
  std::size_t list_base[segsort_bins];
  std::size_t total = 0;
  for (int i = 0; i < segsort_bins; ++i) {
    bounds.upper[i] = i < segsort_bins - 1 ? tune::upper[i] : UINT32_MAX;
    // Bin i holds segments larger than lower, so at most n / (lower + 1) of them. Bin 0 has no
    // list: its kernel runs over all segments.
    const std::size_t lower = i == 0 ? 1 : tune::upper[i - 1];
    capacity[i] = i == 0 ? 0 : std::min(segments, n / (lower + 1));
    list_base[i] = total;
    bounds.list_base[i] = total;
    total += capacity[i];
  }
  buffer<std::uint32_t> lists(ctx, total);
  buffer<std::uint32_t> counters(ctx, segsort_bins + 2);
  CANOPY_CUDA_CHECK(cudaMemsetAsync(counters.data(), 0, segsort_bins * sizeof(std::uint32_t), stream));
  CANOPY_CUDA_CHECK(cudaMemsetAsync(counters.data() + segsort_bins, 0xff, 2 * sizeof(std::uint32_t), stream));
  {
    const unsigned blocks = unsigned((segments + 255) / 256);
    segsort_bin_kernel<256><<<blocks, 256, 0, stream>>>(offsets, segments, n, bounds, lists.data(),
                                                   counters.data());
    CANOPY_CUDA_CHECK_LAUNCH("canopy::segmented_sort (binning)");
  }
  if (check == offsets_check::full) {
    // One read-back for the check; the list lengths come with it, so that each bin's grid is
    // exact instead of its bound (a bound-sized grid of blocks that find no segment and exit cost
    // up to a few tenths of a ms at 2^26 keys in segments of 16).
    std::uint32_t counts[segsort_bins + 2];
    CANOPY_CUDA_CHECK(cudaMemcpyAsync(counts, counters.data(), sizeof(counts), cudaMemcpyDeviceToHost, stream));
    CANOPY_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::uint32_t first_decrease = counts[segsort_bins], bad_last = counts[segsort_bins + 1];
    require(first_decrease == UINT32_MAX, function, "offsets",
            "offsets[" + std::to_string(std::size_t(first_decrease) + 1) + "] is less than offsets[" +
                std::to_string(first_decrease) + "] (offsets must not decrease)");
    require(bad_last == UINT32_MAX, function, "offsets",
            "last offset " + std::to_string(bad_last) + " is past the end of keys (length " + std::to_string(n) + ")");
    for (int i = 1; i < segsort_bins; ++i) capacity[i] = std::min<std::size_t>(capacity[i], counts[i]);
  }
  const std::uint32_t* c = counters.data();
  const std::uint32_t* l = lists.data();
  auto grid = [](std::size_t segs, int per_block) { return unsigned((segs + per_block - 1) / per_block); };
  if (n >= 2) {
    segsort_group_kernel<Key, Value, HasValues, tune::g0, tune::i0, tune::small_block, false>
        <<<grid(segments, tune::small_block / tune::g0), tune::small_block, 0, stream>>>(keys, values, n, offsets,
                                                                                        segments, nullptr, nullptr, comp);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::segmented_sort (tiny segments)");
  }
  if (capacity[1]) {
    segsort_group_kernel<Key, Value, HasValues, tune::g1, tune::i1, tune::small_block, true>
        <<<grid(capacity[1], tune::small_block / tune::g1), tune::small_block, 0, stream>>>(
            keys, values, n, offsets, segments, l + list_base[1], c + 1, comp);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::segmented_sort (bin 1)");
  }
  if (capacity[2]) {
    segsort_group_kernel<Key, Value, HasValues, tune::g2, tune::i2, tune::small_block, true>
        <<<grid(capacity[2], tune::small_block / tune::g2), tune::small_block, 0, stream>>>(
            keys, values, n, offsets, segments, l + list_base[2], c + 2, comp);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::segmented_sort (bin 2)");
  }
  if (capacity[3]) {
    segsort_group_kernel<Key, Value, HasValues, tune::g3, tune::i3, tune::g3, true>
        <<<grid(capacity[3], 1), tune::g3, 0, stream>>>(keys, values, n, offsets, segments, l + list_base[3], c + 3,
                                                        comp);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::segmented_sort (bin 3)");
  }
  if (capacity[4]) {
    segsort_group_kernel<Key, Value, HasValues, tune::g4, tune::i4, tune::g4, true>
        <<<grid(capacity[4], 1), tune::g4, 0, stream>>>(keys, values, n, offsets, segments, l + list_base[4], c + 4,
                                                        comp);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::segmented_sort (bin 4)");
  }
  if (capacity[5]) {
    // Large segments merge through a copy of n keys (and values): the caller's (tmp_keys /
    // tmp_values: n elements each, not overlapping keys/values) or a temporary one.
    buffer<Key> tmp_k(ctx, tmp_keys != nullptr ? 0 : n);
    buffer<Value> tmp_v(ctx, HasValues && tmp_values == nullptr ? n : 0);
    Key* tk = tmp_keys != nullptr ? tmp_keys : tmp_k.data();
    Value* tv = tmp_values != nullptr ? tmp_values : tmp_v.data();
    segsort_large_kernel<Key, Value, HasValues, tune::g4, tune::i4>
        <<<grid(capacity[5], 1), tune::g4, 0, stream>>>(keys, values, tk, tv, n, offsets,
                                                       l + list_base[5], c + 5, comp);
    CANOPY_CUDA_CHECK_LAUNCH("canopy::segmented_sort (large segments)");
  }
}

}  // namespace canopy::detail

#endif  // CANOPY_HAS_CUDA && __CUDACC__
