// canopy/structures/detail/bvh_sort.hpp — the builder's "sort" stage: (Morton code, primitive id)
// pairs, stable, by the low `bits` bits of the code.
#pragma once

#include <canopy/core/context.hpp>
#include <canopy/core/span.hpp>

#include <cstdint>

namespace canopy {
namespace detail {

//! Sorts keys and values (primitive ids 0..n-1 on entry) by bits [0, bits) of the keys, stably.
void bvh_sort_codes(context& ctx, span<std::uint32_t> keys, span<std::uint32_t> values, int bits);
void bvh_sort_codes(context& ctx, span<std::uint64_t> keys, span<std::uint32_t> values, int bits);
//! False while the sort stage is the interim host sort (benchmarks say so in their output).
bool bvh_sort_is_radix();

}  // namespace detail
}  // namespace canopy
