// canopy/core/functional.hpp — the standard binary operators of the primitives.
//
// Every operator is a stateless CANOPY_HD functor, usable in kernels and on the host. Scans and
// reductions need only associativity from an operator. For these four on arithmetic types the CUDA
// backend also uses commutativity (is_commutative in detail/scan_kernels.cuh: the persistent scan
// and the streamed reduction fold a tile's values in any order), which holds for them with these
// caveats on floating point:
//   - plus and multiplies are associative only up to rounding: results may differ from a sequential
//     fold in the last bits, between backends, and between runs of the look-back scans (which
//     predecessors a tile sums depends on timing);
//   - minimum and maximum are neither associative nor commutative once a NaN takes part (a < b is
//     false both ways): on inputs containing NaN their results are unspecified. Remove NaNs first,
//     or pass an operator of your own that orders them.
#pragma once

#include <canopy/core/config.hpp>

namespace canopy {

//! a + b. Identity: T(0).
template <class T>
struct plus {
  CANOPY_HD constexpr T operator()(const T& a, const T& b) const { return a + b; }
};

//! The larger of a and b (a when equal). Identity: the lowest value of T.
template <class T>
struct maximum {
  CANOPY_HD constexpr T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};

//! The smaller of a and b (a when equal). Identity: the largest value of T.
template <class T>
struct minimum {
  CANOPY_HD constexpr T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};

//! a * b. Identity: T(1).
template <class T>
struct multiplies {
  CANOPY_HD constexpr T operator()(const T& a, const T& b) const { return a * b; }
};

}  // namespace canopy
