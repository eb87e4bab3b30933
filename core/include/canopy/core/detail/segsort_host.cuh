// canopy/core/detail/segsort_host.cuh — the host backend of segmented_sort (plain C++, oneTBB).
// Included from segmented_sort.hpp after offsets_check is defined.
#pragma once

#include <canopy/core/buffer.hpp>
#include <canopy/core/detail/merge_host.cuh>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace canopy::detail {

//! Throws invalid_argument unless offsets[0..segments] is non-decreasing and ends <= n.
inline void check_segment_offsets_host(const char* function, const std::uint32_t* offsets, std::size_t segments,
                                       std::size_t n) {
  for (std::size_t s = 0; s < segments; ++s)
    require(offsets[s] <= offsets[s + 1], function, "offsets",
            "offsets[" + std::to_string(s + 1) + "] = " + std::to_string(offsets[s + 1]) + " is less than offsets[" +
                std::to_string(s) + "] = " + std::to_string(offsets[s]) + " (offsets must not decrease)");
  require(offsets[segments] <= n, function, "offsets",
          "last offset " + std::to_string(offsets[segments]) + " is past the end of keys (length " +
              std::to_string(n) + ")");
}

//! Stable insertion sort: fewer moves than std::stable_sort's buffer for the tiny segments that
//! dominate tree builds, and no allocation.
template <class T, class Less>
void insertion_sort_host(T* first, T* last, Less less_fn) {
  for (T* i = first + 1; i < last; ++i) {
    T x = *i;
    T* j = i;
    while (j > first && less_fn(x, *(j - 1))) {
      *j = *(j - 1);
      --j;
    }
    *j = x;
  }
}

template <class T, class Less>
void stable_sort_segment_host(T* first, T* last, Less less_fn) {
  if (last - first <= 32) insertion_sort_host(first, last, less_fn);
  else std::stable_sort(first, last, less_fn);
}

template <class Key, class Value, bool HasValues, class Comp>
void segmented_sort_host(const char* function, context& ctx, Key* keys, Value* values, std::size_t n,
                         const std::uint32_t* offsets, std::size_t segments, Comp comp, offsets_check check) {
  if (check == offsets_check::full) check_segment_offsets_host(function, offsets, segments, n);
  // Clamped like the CUDA backend: with trusted offsets a bad segment is sorted as [b, max(b, e)).
  auto bounds = [&](std::size_t s, std::size_t& b, std::size_t& e) {
    b = std::min<std::size_t>(offsets[s], n);
    e = std::min<std::size_t>(std::max<std::size_t>(offsets[s + 1], b), n);
  };
  if constexpr (HasValues) {
    using item = merge_item<Key, Value>;
    buffer<item> scratch(ctx, n);  // segment [b, e) uses scratch[b, e)
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, segments), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t s = r.begin(); s != r.end(); ++s) {
        std::size_t b, e;
        bounds(s, b, e);
        if (e - b < 2) continue;
        item* it = scratch.data();
        for (std::size_t i = b; i < e; ++i) it[i] = item{keys[i], values[i]};
        stable_sort_segment_host(it + b, it + e, [&](const item& x, const item& y) { return comp(x.key, y.key); });
        for (std::size_t i = b; i < e; ++i) {
          keys[i] = it[i].key;
          values[i] = it[i].value;
        }
      }
    });
  } else {
    (void)values;
    (void)ctx;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, segments), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t s = r.begin(); s != r.end(); ++s) {
        std::size_t b, e;
        bounds(s, b, e);
        if (e - b < 2) continue;
        stable_sort_segment_host(keys + b, keys + e, [&](const Key& x, const Key& y) { return comp(x, y); });
      }
    });
  }
}

}  // namespace canopy::detail
