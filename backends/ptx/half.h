// IEEE binary16 encoding of constants (f16 immediates are written as raw bits in PTX).
#pragma once

#include <cstdint>

namespace spire::ptx {

// Rounds to nearest even; overflow gives +-inf, NaN stays a (quiet) NaN, tiny values become subnormals or 0.
uint16_t f32_to_f16_bits(float v);
// The exact value of an f16 bit pattern, for tests and error messages.
float f16_bits_to_f32(uint16_t h);

}  // namespace spire::ptx
