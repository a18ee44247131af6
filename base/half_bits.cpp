#include "base/half_bits.h"

#include <bit>
#include <cmath>

namespace spire {

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

uint16_t f32_to_bf16_bits(float v) {
  const uint32_t x = std::bit_cast<uint32_t>(v);
  // A NaN keeps its sign and top payload bits and is made quiet, so rounding cannot carry it into inf.
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x0040u);
  // Round half to even on the 16 dropped bits: adding 0x7FFF plus the kept lowest bit carries exactly when
  // the dropped part is above half, or is half and the kept part is odd. A carry into the exponent is right,
  // and the largest finite values round to inf the same way.
  return uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float bf16_bits_to_f32(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

namespace {

// Rounds to a binary format with `digits` significand bits, smallest normal exponent `min_exp` (the value
// 2^min_exp) and largest finite value `max_finite`, half to even. Subnormals keep the quantum of 2^min_exp's binade.
double round_to_format(double v, int digits, int min_exp, double max_finite) {
  if (v == 0 || !std::isfinite(v)) return v;
  int e;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  const int binade = std::max(e - 1, min_exp);
  const double quantum = std::ldexp(1.0, binade - (digits - 1));
  const double r = std::nearbyint(v / quantum) * quantum;  // v / quantum is exact: a power-of-two scaling
  return std::fabs(r) > max_finite ? std::copysign(INFINITY, v) : r;
}

}  // namespace

double round_to_f16(double v) { return round_to_format(v, 11, -14, 65504.0); }
double round_to_bf16(double v) { return round_to_format(v, 8, -126, 3.3895313892515355e38); }

}  // namespace spire
