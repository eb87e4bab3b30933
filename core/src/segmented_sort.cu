// Instantiations of segmented_sort for the common keys with canopy::less, compiled by nvcc when the
// build has CUDA, so that callers compiled by the host compiler reach the kernels.
#include <canopy/core/segmented_sort.hpp>

namespace canopy {

#define CANOPY_SEGMENTED_SORT_INSTANTIATE(K)                                                               \
  template void segmented_sort_keys<K, less<K>>(context&, span<K>, span<const std::uint32_t>, less<K>,      \
                                                offsets_check);                                             \
  template void segmented_sort_pairs<K, std::uint32_t, less<K>>(context&, span<K>, span<std::uint32_t>,     \
                                                                span<const std::uint32_t>, less<K>, offsets_check);
CANOPY_SEGMENTED_SORT_INSTANTIATE(std::uint32_t)
CANOPY_SEGMENTED_SORT_INSTANTIATE(std::int32_t)
CANOPY_SEGMENTED_SORT_INSTANTIATE(float)
CANOPY_SEGMENTED_SORT_INSTANTIATE(std::uint64_t)
#undef CANOPY_SEGMENTED_SORT_INSTANTIATE

}  // namespace canopy
