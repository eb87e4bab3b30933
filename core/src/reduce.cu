// Explicit instantiations of the CUDA reduction engine for the common value types and operators, so
// that translation units compiled by the host compiler can call canopy::reduce on the CUDA backend.
#include <canopy/core/reduce.hpp>

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
namespace canopy {
namespace detail {
#define CANOPY_REDUCE_INSTANTIATE(T, OP) \
  template void cuda_reduce<T, OP<T>>(context&, const T*, std::size_t, T*, T, OP<T>);
#define CANOPY_REDUCE_INSTANTIATE_OPS(T) \
  CANOPY_REDUCE_INSTANTIATE(T, plus)     \
  CANOPY_REDUCE_INSTANTIATE(T, maximum)  \
  CANOPY_REDUCE_INSTANTIATE(T, minimum)
CANOPY_REDUCE_INSTANTIATE_OPS(std::int32_t)
CANOPY_REDUCE_INSTANTIATE_OPS(std::uint32_t)
CANOPY_REDUCE_INSTANTIATE_OPS(std::int64_t)
CANOPY_REDUCE_INSTANTIATE_OPS(std::uint64_t)
CANOPY_REDUCE_INSTANTIATE_OPS(float)
CANOPY_REDUCE_INSTANTIATE_OPS(double)
#undef CANOPY_REDUCE_INSTANTIATE_OPS
#undef CANOPY_REDUCE_INSTANTIATE
}  // namespace detail
}  // namespace canopy
#endif
