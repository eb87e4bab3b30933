// canopy/core/detail/host_reduce.hpp — host (oneTBB) reduction: chunk partials in parallel, then a
// serial fold in chunk order, so that non-commutative operators keep their order.
#pragma once

#include <canopy/core/detail/host_scan.hpp>

#include <cstddef>
#include <vector>

namespace canopy {
namespace detail {

template <class T, class Op>
T host_reduce(const T* in, std::size_t n, T identity, const Op& op) {
  if (n == 0) return identity;
  const host_chunks chunks(n);
  std::vector<T> partial(chunks.count);
  for_each_chunk(chunks.count, [&](std::size_t c) {
    T acc = in[chunks.begin(c)];
    for (std::size_t i = chunks.begin(c) + 1; i < chunks.end(c, n); ++i) acc = op(acc, in[i]);
    partial[c] = acc;
  });
  T total = identity;
  for (const T& p : partial) total = op(total, p);
  return total;
}

}  // namespace detail
}  // namespace canopy
