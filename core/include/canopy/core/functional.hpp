// canopy/core/functional.hpp — the standard binary operators of the primitives.
//
// Every operator is a stateless CANOPY_HD functor, usable in kernels and on the host. Scans and
// reductions need associativity only; none of them assumes commutativity.
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
