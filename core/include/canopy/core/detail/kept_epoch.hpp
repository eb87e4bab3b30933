// canopy/core/detail/kept_epoch.hpp — the epoch rule of look-back state kept between calls (the
// scan/select descriptors a context keeps, the SAT's kept scratch): every call tags the words it
// publishes with a new epoch, and words of any other epoch read as "not yet published", so the
// state needs clearing only when it is fresh memory or the epoch would wrap.
#pragma once

namespace canopy {
namespace detail {

//! Epochs are the 30 bits of a status word above its two status bits: 1 .. kept_epoch_limit - 1
//! (0 is zeroed memory's).
constexpr unsigned kept_epoch_limit = 1u << 30;

//! Moves `epoch` (the previous call's, 0 after a clear) to the next call's. Returns true when the
//! whole store must be cleared first, because it is fresh memory (`fresh`: it may hold anything) or
//! the epoch would wrap; the epoch then restarts at 1.
inline bool advance_epoch(unsigned& epoch, bool fresh) {
  const bool clear = fresh || epoch + 1 >= kept_epoch_limit;
  if (clear) epoch = 0;
  ++epoch;
  return clear;
}

}  // namespace detail
}  // namespace canopy
