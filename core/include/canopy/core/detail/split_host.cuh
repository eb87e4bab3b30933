// canopy/core/detail/split_host.cuh — the host backend's stable split pass (oneTBB).
//
// One pass of the classic parallel split: the input is cut into chunks; each chunk counts its
// digits; a digit-major scan over (digit, chunk) gives every chunk's first output slot per digit;
// each chunk then writes its records in input order. Keys are kept as raw bits; digits are taken
// from their ordered form. Plain C++: included by .cu files in host-only builds too.
#pragma once

#include <canopy/core/key_traits.hpp>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace canopy::detail {

//! Stand-in value type of key-only passes.
struct no_value {};

//! One stable split pass over n records: digit = (ordered(key) >> shift) & ((1 << bits) - 1).
//! vals_in == nullptr with V an integer means "value = input position" (index variants).
//! keys_out may be null (keys not needed after this pass). Inputs and outputs must not overlap.
template <class K, class V>
void host_split_pass(const K* keys_in, K* keys_out, const V* vals_in, V* vals_out, std::size_t n, int shift,
                     int bits, key_kind kind) {
  constexpr bool has_values = !std::is_same_v<V, no_value>;
  if (n == 0) return;
  const K mask = K((1u << bits) - 1);
  const int bins = 1 << bits;
  const std::size_t workers = std::max<std::size_t>(1, std::thread::hardware_concurrency());
  // Chunks of at least 64 Ki records keep the per-chunk count arrays (256 size_t, 2 KiB each) negligible.
  const std::size_t chunk = std::max<std::size_t>(std::size_t(1) << 16, (n + 4 * workers - 1) / (4 * workers));
  const std::size_t chunks = (n + chunk - 1) / chunk;
  std::vector<std::size_t> offsets(chunks * std::size_t(bins), 0);
  auto digit = [&](K raw) { return std::size_t((to_ordered_bits(raw, kind) >> shift) & mask); };
  tbb::parallel_for(std::size_t(0), chunks, [&](std::size_t c) {
    std::size_t* count = offsets.data() + c * bins;
    const std::size_t end = std::min(n, (c + 1) * chunk);
    for (std::size_t i = c * chunk; i < end; ++i) ++count[digit(keys_in[i])];
  });
  std::size_t running = 0;
  for (int d = 0; d < bins; ++d)
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t count = offsets[c * bins + d];
      offsets[c * bins + d] = running;
      running += count;
    }
  tbb::parallel_for(std::size_t(0), chunks, [&](std::size_t c) {
    std::size_t* next = offsets.data() + c * bins;
    const std::size_t end = std::min(n, (c + 1) * chunk);
    for (std::size_t i = c * chunk; i < end; ++i) {
      const std::size_t o = next[digit(keys_in[i])]++;
      if (keys_out) keys_out[o] = keys_in[i];
      if constexpr (has_values) vals_out[o] = vals_in ? vals_in[i] : V(i);
    }
  });
}

}  // namespace canopy::detail
