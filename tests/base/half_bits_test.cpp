#include <gtest/gtest.h>

#include <cmath>
#include <bit>
#include <cstring>
#include <limits>

#include "base/half_bits.h"

namespace spire {
namespace {

TEST(Half, KnownEncodings) {
  EXPECT_EQ(f32_to_f16_bits(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16_bits(65519.0f), 0x7BFF);  // below the halfway point to 65536
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);  // ties to even: rounds up to inf
  EXPECT_EQ(f32_to_f16_bits(INFINITY), 0x7C00);
  EXPECT_EQ(f32_to_f16_bits(-INFINITY), 0xFC00);
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // half of it: tie to even (0)
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: tie to even (2)
  EXPECT_EQ(f32_to_f16_bits(0.1f), 0x2E66);
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie, even stays
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie, odd rounds up
  uint16_t nan = f32_to_f16_bits(std::nanf(""));
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
}

TEST(Half, RoundTripsEveryHalf) {
  // Every finite f16 value is exact in f32, so encoding it back must give the same bits.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;  // NaN payloads
    float f = f16_bits_to_f32(uint16_t(h));
    ASSERT_EQ(f32_to_f16_bits(f), h) << "f16 0x" << std::hex << h << " = " << f;
  }
}

TEST(Half, NearestAgainstDoubleReference) {
  // Every f16 neighbour pair: a value just inside either side of the midpoint rounds to that side.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    double lo = f16_bits_to_f32(uint16_t(h)), hi = f16_bits_to_f32(uint16_t(h + 1));
    double mid = (lo + hi) / 2;
    float below = std::nextafter(float(mid), -INFINITY), above = std::nextafter(float(mid), INFINITY);
    ASSERT_EQ(f32_to_f16_bits(below), h) << lo << " " << hi;
    ASSERT_EQ(f32_to_f16_bits(above), h + 1) << lo << " " << hi;
  }
}

TEST(BFloat16, KnownEncodings) {
  EXPECT_EQ(f32_to_bf16_bits(0.0f), 0x0000);
  EXPECT_EQ(f32_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_bf16_bits(0.1f), 0x3DCD);  // 0x3DCCCCCD: dropped 0xCCCD is above half
  EXPECT_EQ(f32_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie, even stays
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to inf
  EXPECT_EQ(f32_to_bf16_bits(INFINITY), 0x7F80);
  EXPECT_EQ(f32_to_bf16_bits(-INFINITY), 0xFF80);
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  // A NaN whose payload sits only in the dropped bits stays a NaN (no carry into inf).
  const uint16_t nan = f32_to_bf16_bits(std::bit_cast<float>(0x7F800001u));
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0xFFFFFFFFu)), 0xFFFF);
}

TEST(BFloat16, RoundTripsEveryBFloat16) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7F80) == 0x7F80 && (b & 0x7F)) continue;  // NaN payloads
    ASSERT_EQ(f32_to_bf16_bits(bf16_bits_to_f32(uint16_t(b))), b) << std::hex << b;
  }
}

TEST(BFloat16, NearestAgainstDoubleReference) {
  for (uint32_t b = 0; b < 0x7F7F; b += 7) {
    const double lo = bf16_bits_to_f32(uint16_t(b)), hi = bf16_bits_to_f32(uint16_t(b + 1));
    const double mid = (lo + hi) / 2;
    ASSERT_EQ(f32_to_bf16_bits(std::nextafter(float(mid), -INFINITY)), b) << lo;
    ASSERT_EQ(f32_to_bf16_bits(std::nextafter(float(mid), INFINITY)), b + 1) << lo;
  }
}

// Rounding straight from double agrees with the bit encoders wherever a float holds the value exactly, and
// rounds a double just past a float-level midpoint the right way (rounding through float first would not).
TEST(HalfRounding, FromDoubleMatchesTheEncoders) {
  for (uint32_t h = 0; h < 0x7BFF; h += 3) {
    const double lo = f16_bits_to_f32(uint16_t(h)), hi = f16_bits_to_f32(uint16_t(h + 1));
    const double mid = (lo + hi) / 2;
    ASSERT_EQ(round_to_f16(mid), (h & 1) ? hi : lo) << lo;  // a tie goes to the even neighbour
    ASSERT_EQ(round_to_f16(-mid), (h & 1) ? -hi : -lo);
    ASSERT_EQ(round_to_f16(mid + (hi - lo) * 1e-9), hi);
    ASSERT_EQ(round_to_f16(mid - (hi - lo) * 1e-9), lo);
  }
  EXPECT_EQ(round_to_f16(65519.9), 65504.0);
  EXPECT_EQ(round_to_f16(65520.0), INFINITY);
  EXPECT_EQ(round_to_f16(std::ldexp(1.0, -25)), 0.0);            // half the smallest subnormal: to even (0)
  EXPECT_EQ(round_to_f16(std::ldexp(1.0, -25) * 1.0000001), std::ldexp(1.0, -24));
  for (uint32_t b = 0; b < 0x7F7F; b += 5) {
    const double lo = bf16_bits_to_f32(uint16_t(b)), hi = bf16_bits_to_f32(uint16_t(b + 1));
    const double mid = (lo + hi) / 2;
    ASSERT_EQ(round_to_bf16(mid), (b & 1) ? hi : lo) << lo;
    ASSERT_EQ(round_to_bf16(mid + (hi - lo) * 1e-9), hi);
  }
  EXPECT_EQ(round_to_bf16(1e39), INFINITY);
  EXPECT_TRUE(std::isnan(round_to_bf16(NAN)));
}

}  // namespace
}  // namespace spire
