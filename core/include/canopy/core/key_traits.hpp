// canopy/core/key_traits.hpp — keys as ordered unsigned integers.
//
// Radix sort and split look at the bits of a key's *ordered-unsigned form*: an unsigned integer of
// the same width whose unsigned order is the key's order. Bit ranges [begin_bit, end_bit) given to
// the sort and split primitives refer to this form.
//
//   uint32_t, uint64_t : the key itself.
//   int32_t,  int64_t  : the two's-complement bits with the sign bit flipped.
//   float,    double   : IEEE-754 total order: positive values (sign bit 0) get the sign bit set;
//                        negative values (sign bit 1) get all bits inverted. The resulting order is
//                        -NaN < -inf < negatives < -0.0 < +0.0 < positives < +inf < +NaN,
//                        i.e. -0.0 sorts strictly before +0.0 and NaNs go to the end matching
//                        their sign bit (NaNs with a set sign bit first, others last), ordered among
//                        themselves by payload.
#pragma once

#include <canopy/core/config.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace canopy {

//! How a key's raw bits map to its ordered-unsigned form.
enum class key_kind : std::uint8_t {
  unsigned_integer,  //!< identity
  signed_integer,    //!< flip the sign bit
  floating_point,    //!< IEEE-754 total order (see the file comment)
};

//! Ordered-unsigned form of raw key bits `raw` of the given kind. `Bits` is uint32_t or uint64_t.
template <class Bits>
CANOPY_HD CANOPY_FORCEINLINE Bits to_ordered_bits(Bits raw, key_kind kind) {
  constexpr Bits sign = Bits(1) << (sizeof(Bits) * 8 - 1);
  if (kind == key_kind::signed_integer) return raw ^ sign;
  if (kind == key_kind::floating_point) return (raw & sign) ? Bits(~raw) : Bits(raw | sign);
  return raw;
}

//! Inverse of to_ordered_bits.
template <class Bits>
CANOPY_HD CANOPY_FORCEINLINE Bits from_ordered_bits(Bits ordered, key_kind kind) {
  constexpr Bits sign = Bits(1) << (sizeof(Bits) * 8 - 1);
  if (kind == key_kind::signed_integer) return ordered ^ sign;
  if (kind == key_kind::floating_point) return (ordered & sign) ? Bits(ordered & ~sign) : Bits(~ordered);
  return ordered;
}

//! Traits of the key types canopy sorts: uint32_t, int32_t, float, uint64_t, int64_t, double.
//! `bits_type` is the unsigned integer of the same width; `kind` selects the mapping above.
template <class Key>
struct key_traits;

template <>
struct key_traits<std::uint32_t> {
  using bits_type = std::uint32_t;
  static constexpr key_kind kind = key_kind::unsigned_integer;
};
template <>
struct key_traits<std::int32_t> {
  using bits_type = std::uint32_t;
  static constexpr key_kind kind = key_kind::signed_integer;
};
template <>
struct key_traits<float> {
  using bits_type = std::uint32_t;
  static constexpr key_kind kind = key_kind::floating_point;
};
template <>
struct key_traits<std::uint64_t> {
  using bits_type = std::uint64_t;
  static constexpr key_kind kind = key_kind::unsigned_integer;
};
template <>
struct key_traits<std::int64_t> {
  using bits_type = std::uint64_t;
  static constexpr key_kind kind = key_kind::signed_integer;
};
template <>
struct key_traits<double> {
  using bits_type = std::uint64_t;
  static constexpr key_kind kind = key_kind::floating_point;
};

//! True for the key types above.
template <class Key, class = void>
struct is_radix_key : std::false_type {};
template <class Key>
struct is_radix_key<Key, std::void_t<typename key_traits<Key>::bits_type>> : std::true_type {};

//! The ordered-unsigned form of a key (host or device).
template <class Key>
CANOPY_HD CANOPY_FORCEINLINE typename key_traits<Key>::bits_type ordered_bits(Key key) {
  using bits = typename key_traits<Key>::bits_type;
  static_assert(sizeof(bits) == sizeof(Key), "key and bits differ in size");
  bits raw;
  std::memcpy(&raw, &key, sizeof(raw));
  return to_ordered_bits(raw, key_traits<Key>::kind);
}

}  // namespace canopy
