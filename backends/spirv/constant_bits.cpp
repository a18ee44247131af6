#include "backends/spirv/constant_bits.h"

#include <bit>
#include <stdexcept>

namespace spire::spirv {

uint16_t half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exponent = (x >> 23) & 0xFFu;
  uint32_t mantissa = x & 0x7FFFFFu;
  if (exponent == 0xFF) return uint16_t(sign | 0x7C00u | (mantissa ? 0x200u : 0u));  // inf, quiet NaN
  int e = int(exponent) - 127 + 15;  // biased half exponent
  if (e >= 31) return uint16_t(sign | 0x7C00u);
  if (e <= 0) {
    // Half subnormal: value = h * 2^-24, and the float's value = m24 * 2^(exponent-150).
    if (exponent == 0) return uint16_t(sign);  // float zero or subnormal (< 2^-126): rounds to zero
    uint32_t m24 = mantissa | 0x800000u;
    uint32_t shift = uint32_t(14 - e);
    if (shift > 25) return uint16_t(sign);
    uint32_t h = m24 >> shift;
    uint32_t rest = m24 & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (h & 1))) ++h;  // may carry into the smallest normal: correct
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(e) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;  // a carry may reach infinity: correct
  return uint16_t(sign | h);
}

std::vector<uint32_t> float_constant_words(uint32_t width, double v) {
  switch (width) {
    case 16: return {uint32_t(half_bits(float(v)))};  // high 16 bits zero, as the spec requires
    case 32: return {std::bit_cast<uint32_t>(float(v))};
    case 64: {
      uint64_t bits = std::bit_cast<uint64_t>(v);
      return {uint32_t(bits), uint32_t(bits >> 32)};
    }
  }
  throw std::invalid_argument("float constant of unsupported width");
}

std::vector<uint32_t> int_constant_words(uint32_t width, int64_t v) {
  switch (width) {
    case 32: return {uint32_t(uint64_t(v))};
    case 64: return {uint32_t(uint64_t(v)), uint32_t(uint64_t(v) >> 32)};
  }
  throw std::invalid_argument("integer constant of unsupported width");
}

}  // namespace spire::spirv
