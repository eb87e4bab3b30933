// The builder's sort stage: canopy::radix_sort_pairs over the code bits. While core/src does not
// yet define the radix sort (structures/CMakeLists.txt sets CANOPY_BVH_HAVE_RADIX_SORT), pairs are
// sorted on the host instead (on CUDA: copied there and back, which synchronises).
#include <canopy/core/buffer.hpp>
#include <canopy/core/radix_sort.hpp>
#include <canopy/structures/detail/bvh_sort.hpp>

#include <tbb/parallel_sort.h>

#include <utility>
#include <vector>

namespace canopy {
namespace detail {
namespace {

template <class Key>
void sort_pairs_on_host(context& ctx, span<Key> keys, span<std::uint32_t> values) {
  const std::size_t n = keys.size();
  std::vector<Key> k(n);
  std::vector<std::uint32_t> v(n);
  copy(ctx, span<const Key>(keys), host_span(k.data(), n));
  copy(ctx, span<const std::uint32_t>(values), host_span(v.data(), n));
  ctx.synchronize();
  std::vector<std::pair<Key, std::uint32_t>> pairs(n);
  for (std::size_t i = 0; i < n; ++i) pairs[i] = {k[i], v[i]};
  // Values are distinct, so ordering by (key, value) is the stable order of ids 0..n-1.
  tbb::parallel_sort(pairs.begin(), pairs.end());
  for (std::size_t i = 0; i < n; ++i) k[i] = pairs[i].first, v[i] = pairs[i].second;
  copy(ctx, span<const Key>(host_span(k.data(), n)), keys);
  copy(ctx, span<const std::uint32_t>(host_span(v.data(), n)), values);
  ctx.synchronize();
}

}  // namespace

#ifndef CANOPY_BVH_HAVE_RADIX_SORT
#define CANOPY_BVH_HAVE_RADIX_SORT 0
#endif

void bvh_sort_codes(context& ctx, span<std::uint32_t> keys, span<std::uint32_t> values, int bits) {
#if CANOPY_BVH_HAVE_RADIX_SORT
  radix_sort_pairs(ctx, keys, values, 0, bits);
#else
  sort_pairs_on_host(ctx, keys, values);
#endif
}
void bvh_sort_codes(context& ctx, span<std::uint64_t> keys, span<std::uint32_t> values, int bits) {
#if CANOPY_BVH_HAVE_RADIX_SORT
  radix_sort_pairs(ctx, keys, values, 0, bits);
#else
  sort_pairs_on_host(ctx, keys, values);
#endif
}

bool bvh_sort_is_radix() { return CANOPY_BVH_HAVE_RADIX_SORT != 0; }

}  // namespace detail
}  // namespace canopy
