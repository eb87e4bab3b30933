// canopy/core/detail/overlap.hpp — the one byte-range overlap test behind the argument checks
// ("out overlaps in") of every entry point. Host-only: compares addresses, never dereferences.
#pragma once

#include <canopy/core/span.hpp>

#include <cstddef>
#include <cstdint>

namespace canopy::detail {

//! True when [a, a + an) and [b, b + bn) share a byte (an empty range overlaps nothing).
inline bool ranges_overlap(const void* a, std::size_t an, const void* b, std::size_t bn) {
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return an != 0 && bn != 0 && pa < pb + bn && pb < pa + an;
}

//! True when the byte ranges of a and b intersect (both non-empty); element types may differ.
template <class A, class B>
bool overlaps(span<A> a, span<B> b) {
  return ranges_overlap(a.data(), a.size_bytes(), b.data(), b.size_bytes());
}

}  // namespace canopy::detail
