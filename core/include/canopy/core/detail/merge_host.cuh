// canopy/core/detail/merge_host.cuh — the host backend of merge_sort (plain C++, oneTBB).
//
// Chunks of the input are stable-sorted in parallel, then merged pairwise in parallel rounds
// (std::merge takes from the left run on ties, so the whole sort is stable).
#pragma once

#include <canopy/core/buffer.hpp>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>

namespace canopy::detail {

//! A key with its value, for sorting pairs with std algorithms on the host.
template <class Key, class Value>
struct merge_item {
  Key key;
  Value value;
};

//! Stable sort of [first, last) by proj-comparison, in parallel with oneTBB; `scratch` holds as
//! many elements as the range.
template <class T, class Less>
void parallel_stable_sort_host(T* data, T* scratch, std::size_t n, Less less_fn) {
  constexpr std::size_t serial_below = std::size_t(1) << 15;
  if (n <= serial_below) {
    std::stable_sort(data, data + n, less_fn);
    return;
  }
  // Chunk count: a power of two so that merge rounds pair evenly.
  std::size_t chunks = 1;
  while (chunks < 64 && n / (chunks * 2) >= serial_below) chunks *= 2;
  const std::size_t chunk = (n + chunks - 1) / chunks;
  tbb::parallel_for(std::size_t(0), chunks, [&](std::size_t c) {
    const std::size_t b = std::min(n, c * chunk), e = std::min(n, b + chunk);
    std::stable_sort(data + b, data + e, less_fn);
  });
  T* src = data;
  T* dst = scratch;
  for (std::size_t width = chunk; width < n; width *= 2) {
    const std::size_t pairs = (n + 2 * width - 1) / (2 * width);
    tbb::parallel_for(std::size_t(0), pairs, [&](std::size_t p) {
      const std::size_t b = p * 2 * width, m = std::min(n, b + width), e = std::min(n, b + 2 * width);
      std::merge(src + b, src + m, src + m, src + e, dst + b, less_fn);
    });
    std::swap(src, dst);
  }
  if (src != data) std::copy(src, src + n, data);
}

template <class Key, class Value, bool HasValues, class Comp>
void merge_sort_host(context& ctx, Key* keys, Value* values, std::size_t n, Comp comp) {
  if constexpr (HasValues) {
    using item = merge_item<Key, Value>;
    buffer<item> items_buf(ctx, n), scratch(ctx, n);
    item* items = items_buf.data();
    tbb::parallel_for(std::size_t(0), n, [&](std::size_t i) { items[i] = item{keys[i], values[i]}; });
    parallel_stable_sort_host(items, scratch.data(), n,
                              [&](const item& a, const item& b) { return comp(a.key, b.key); });
    tbb::parallel_for(std::size_t(0), n, [&](std::size_t i) {
      keys[i] = items[i].key;
      values[i] = items[i].value;
    });
  } else {
    (void)values;
    buffer<Key> scratch(ctx, n);
    parallel_stable_sort_host(keys, scratch.data(), n, [&](const Key& a, const Key& b) { return comp(a, b); });
  }
}

}  // namespace canopy::detail
