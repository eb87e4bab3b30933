// Explicit instantiations of the CUDA compaction engine for flag selection over common value types,
// so that translation units compiled by the host compiler can call select_flagged/partition_flagged
// on the CUDA backend.
#include <canopy/core/compact.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
namespace canopy {
namespace detail {
#define CANOPY_SELECT_INSTANTIATE(T) \
  template void cuda_select<T, flag_selector>(context&, const T*, std::size_t, T*, std::size_t*, flag_selector, bool);
CANOPY_SELECT_INSTANTIATE(std::uint8_t)
CANOPY_SELECT_INSTANTIATE(std::uint16_t)
CANOPY_SELECT_INSTANTIATE(std::int32_t)
CANOPY_SELECT_INSTANTIATE(std::uint32_t)
CANOPY_SELECT_INSTANTIATE(std::int64_t)
CANOPY_SELECT_INSTANTIATE(std::uint64_t)
CANOPY_SELECT_INSTANTIATE(float)
CANOPY_SELECT_INSTANTIATE(double)
#undef CANOPY_SELECT_INSTANTIATE
}  // namespace detail
}  // namespace canopy
#endif
