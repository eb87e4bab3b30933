// bench/primitives/bench_util.cuh — inputs and checks shared by the bench_*.cu files (the harness-free
// part is bench/common/bench_data.cuh).
//
// Everything here runs through canopy::for_each, so it works on both backends: random inputs are
// made where they are used (no host round trip at 2^28), and results are compared in place.
#pragma once

#include "common/bench_data.cuh"
#include "harness.hpp"

#include <canopy/core/for_each.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace canopy_bench {

template <class T>
struct corrupt_last_fn {
  canopy::span<T> s;
  CANOPY_HD void operator()(std::size_t) const { s[s.size() - 1] = static_cast<T>(~s[s.size() - 1]); }
};

//! Checks a == b element by element; on a difference marks r as a mismatch naming `what`, the index
//! and both values. Returns true when equal.
template <class T>
bool check_equal(canopy::context& ctx, result& r, const char* what, canopy::span<const T> canopy_out,
                 canopy::span<const T> reference) {
  if (canopy_out.size() != reference.size()) {
    report_mismatch(r, std::string(what) + ": canopy produced " + std::to_string(canopy_out.size()) +
                           " elements, the baseline " + std::to_string(reference.size()));
    return false;
  }
  if constexpr (std::is_integral_v<T>) {
    // --corrupt-output: proves that a wrong canopy result is caught (the CTest self-check).
    if (corrupt_output() && !canopy_out.empty())
      canopy::for_each(ctx, 1, corrupt_last_fn<T>{canopy::span<T>(const_cast<T*>(canopy_out.data()), canopy_out.size(),
                                                                  canopy_out.space())});
  }
  const std::size_t i = first_mismatch(ctx, canopy_out, reference);
  if (i == canopy_out.size()) return true;
  report_mismatch(r, std::string(what) + " differs at index " + std::to_string(i) + ": canopy " +
                         describe(element_at(ctx, canopy_out, i)) + ", baseline " +
                         describe(element_at(ctx, reference, i)));
  return false;
}

//! Temporary storage for CUB calls, allocated once outside the timed region.
struct temp_storage {
  canopy::buffer<unsigned char> bytes;
  std::size_t size = 0;
  temp_storage(canopy::context& ctx, std::size_t n) : bytes(ctx, n ? n : 1), size(n) {}
  void* data() { return bytes.data(); }
};

}  // namespace canopy_bench
