#include "backends/ptx/half.h"

#include <bit>
#include <cmath>

namespace spire::ptx {

uint16_t f32_to_f16_bits(float v) {
  uint32_t x = std::bit_cast<uint32_t>(v);
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return uint16_t(sign | 0x7E00u);  // NaN
  if (abs >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // Below the smallest normal f16 (2^-14): the result is a multiple of 2^-24. |v| * 2^24 is exact in
    // float and nearbyint rounds half to even under the default rounding mode.
    float scaled = std::fabs(v) * 16777216.0f;
    return uint16_t(sign | uint16_t(std::nearbyint(scaled)));
  }
  // Normal: rebias the exponent, keep 10 mantissa bits, round the 13 dropped bits half to even. A carry out
  // of the mantissa correctly bumps the exponent (and reaches inf only above the check above).
  uint32_t h = ((abs - 0x38000000u) >> 13);
  uint32_t dropped = abs & 0x1FFFu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

float f16_bits_to_f32(uint16_t h) {
  float sign = (h & 0x8000u) ? -1.0f : 1.0f;
  int exp = (h >> 10) & 0x1F;
  int man = h & 0x3FF;
  if (exp == 0x1F) return man ? std::nanf("") : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(float(man), -24);
  return sign * std::ldexp(float(man | 0x400), exp - 25);
}

}  // namespace spire::ptx
