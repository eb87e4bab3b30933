// Instantiations of merge_sort for the common keys with canopy::less, compiled by nvcc when the
// build has CUDA, so that callers compiled by the host compiler reach the kernels.
#include <canopy/core/merge_sort.hpp>

namespace canopy {

#define CANOPY_MERGE_SORT_INSTANTIATE(K)                                             \
  template void merge_sort_keys<K, less<K>>(context&, span<K>, less<K>);             \
  template void merge_sort_pairs<K, std::uint32_t, less<K>>(context&, span<K>, span<std::uint32_t>, less<K>);
CANOPY_MERGE_SORT_INSTANTIATE(std::uint32_t)
CANOPY_MERGE_SORT_INSTANTIATE(std::int32_t)
CANOPY_MERGE_SORT_INSTANTIATE(float)
CANOPY_MERGE_SORT_INSTANTIATE(std::uint64_t)
#undef CANOPY_MERGE_SORT_INSTANTIATE

}  // namespace canopy
