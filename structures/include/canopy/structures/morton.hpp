// canopy/structures/morton.hpp — Morton (Z-order) codes of 30 and 63 bits.
//
// morton_encode_30 interleaves three 10-bit coordinates (x in bit 2, y in bit 1, z in bit 0 of
// each triple); morton_encode_63 interleaves three 21-bit coordinates the same way, leaving bit 63
// clear. Coordinates outside the range are clamped. The 63-bit code gives an octree 21 levels.
#pragma once

#include <canopy/core/config.hpp>

#include <cstdint>

namespace canopy {

//! Spreads the low 10 bits of v so that bit i lands in bit 3i.
CANOPY_HD constexpr std::uint32_t morton_spread_10(std::uint32_t v) {
  v &= 0x3ffu;
  v = (v | (v << 16)) & 0x030000ffu;
  v = (v | (v << 8)) & 0x0300f00fu;
  v = (v | (v << 4)) & 0x030c30c3u;
  v = (v | (v << 2)) & 0x09249249u;
  return v;
}

//! Spreads the low 21 bits of v so that bit i lands in bit 3i.
CANOPY_HD constexpr std::uint64_t morton_spread_21(std::uint64_t v) {
  v &= 0x1fffffull;
  v = (v | (v << 32)) & 0x001f00000000ffffull;
  v = (v | (v << 16)) & 0x001f0000ff0000ffull;
  v = (v | (v << 8)) & 0x100f00f00f00f00full;
  v = (v | (v << 4)) & 0x10c30c30c30c30c3ull;
  v = (v | (v << 2)) & 0x1249249249249249ull;
  return v;
}

//! 30-bit code of integer cell coordinates, each in [0, 1023].
CANOPY_HD constexpr std::uint32_t morton_encode_30(std::uint32_t x, std::uint32_t y, std::uint32_t z) {
  return (morton_spread_10(x) << 2) | (morton_spread_10(y) << 1) | morton_spread_10(z);
}

//! 63-bit code of integer cell coordinates, each in [0, 2^21 - 1].
CANOPY_HD constexpr std::uint64_t morton_encode_63(std::uint32_t x, std::uint32_t y, std::uint32_t z) {
  return (morton_spread_21(x) << 2) | (morton_spread_21(y) << 1) | morton_spread_21(z);
}

//! Quantises u in [0, 1] to [0, cells - 1], clamping values outside (NaN maps to 0).
CANOPY_HD constexpr std::uint32_t morton_quantize(float u, std::uint32_t cells) {
  const float scaled = u * float(cells);
  if (!(scaled > 0.0f)) return 0;
  if (scaled >= float(cells - 1)) return cells - 1;
  return static_cast<std::uint32_t>(scaled);
}

}  // namespace canopy
