// Compile-time checks of the Morton encoders against hand-worked values.
#include <canopy/structures/morton.hpp>

namespace canopy {
static_assert(morton_encode_30(1, 0, 0) == 4u);
static_assert(morton_encode_30(0, 1, 0) == 2u);
static_assert(morton_encode_30(0, 0, 1) == 1u);
static_assert(morton_encode_30(1023, 1023, 1023) == 0x3fffffffu);
static_assert(morton_encode_63(0x1fffff, 0x1fffff, 0x1fffff) == 0x7fffffffffffffffull);
static_assert(morton_encode_63(2, 0, 0) == 32ull);
static_assert(morton_quantize(0.5f, 1024) == 512u);
static_assert(morton_quantize(2.0f, 1024) == 1023u);
static_assert(morton_quantize(-1.0f, 1024) == 0u);
}  // namespace canopy
