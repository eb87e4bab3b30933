// Explicit instantiations of the CUDA scan engine for the common value types and operators, so that
// translation units compiled by the host compiler can call canopy's scans on the CUDA backend.
#include <canopy/core/scan.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
namespace canopy {
namespace detail {
#define CANOPY_SCAN_INSTANTIATE(T, OP)                                                                     \
  template void cuda_scan<T, OP<T>>(context&, const T*, T*, std::size_t, const std::uint8_t*, std::size_t, \
                                    const T*, OP<T>);
#define CANOPY_SCAN_INSTANTIATE_OPS(T) \
  CANOPY_SCAN_INSTANTIATE(T, plus)     \
  CANOPY_SCAN_INSTANTIATE(T, maximum)  \
  CANOPY_SCAN_INSTANTIATE(T, minimum)
CANOPY_SCAN_INSTANTIATE_OPS(std::int32_t)
CANOPY_SCAN_INSTANTIATE_OPS(std::uint32_t)
CANOPY_SCAN_INSTANTIATE_OPS(std::int64_t)
CANOPY_SCAN_INSTANTIATE_OPS(std::uint64_t)
CANOPY_SCAN_INSTANTIATE_OPS(float)
CANOPY_SCAN_INSTANTIATE_OPS(double)
#undef CANOPY_SCAN_INSTANTIATE_OPS
#undef CANOPY_SCAN_INSTANTIATE
}  // namespace detail
}  // namespace canopy
#endif
