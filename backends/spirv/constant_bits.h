// Literal words of SPIR-V constants: the value's bits in the type's width, low word first.
#pragma once

#include <cstdint>
#include <vector>

namespace spire::spirv {

// IEEE binary16 bits of `f`, rounded to nearest even; overflow gives infinity, NaN stays a quiet NaN.
uint16_t half_bits(float f);

// Words of a float constant of `width` bits (16, 32 or 64) holding `v` (rounded to the width).
std::vector<uint32_t> float_constant_words(uint32_t width, double v);
// Words of an integer constant of `width` bits (32 or 64) holding the low `width` bits of `v`.
std::vector<uint32_t> int_constant_words(uint32_t width, int64_t v);

}  // namespace spire::spirv
