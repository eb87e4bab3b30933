// canopy/core/detail/host_compact.hpp — the selectors of the compaction primitives (shared by both
// backends) and the host (oneTBB) engine: count per chunk, prefix the counts, scatter per chunk.
#pragma once

#include <canopy/core/detail/host_scan.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace canopy {
namespace detail {

//! Selects element i when flags[i] != 0.
struct flag_selector {
  const std::uint8_t* flags;
  template <class T>
  CANOPY_HD bool operator()(std::size_t i, const T&) const { return flags[i] != 0; }
};

//! Selects element i when pred(value) holds.
template <class Pred>
struct predicate_selector {
  Pred pred;
  template <class T>
  CANOPY_HD bool operator()(std::size_t, const T& value) const { return static_cast<bool>(pred(value)); }
};

//! Stable select (or partition) on the host; returns the selected count.
template <class T, class Selector>
std::size_t host_select(const T* in, std::size_t n, T* out, const Selector& select, bool partition) {
  if (n == 0) return 0;
  const host_chunks chunks(n);
  std::vector<std::size_t> selected(chunks.count + 1, 0);
  for_each_chunk(chunks.count, [&](std::size_t c) {
    std::size_t k = 0;
    for (std::size_t i = chunks.begin(c); i < chunks.end(c, n); ++i) k += select(i, in[i]) ? 1 : 0;
    selected[c + 1] = k;
  });
  for (std::size_t c = 0; c < chunks.count; ++c) selected[c + 1] += selected[c];
  const std::size_t total = selected[chunks.count];
  for_each_chunk(chunks.count, [&](std::size_t c) {
    std::size_t k = selected[c];
    std::size_t r = total + (chunks.begin(c) - selected[c]);  // rejected ones before this chunk
    for (std::size_t i = chunks.begin(c); i < chunks.end(c, n); ++i) {
      if (select(i, in[i]))
        out[k++] = in[i];
      else if (partition)
        out[r++] = in[i];
    }
  });
  return total;
}

}  // namespace detail
}  // namespace canopy
