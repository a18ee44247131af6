#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/ptx/half.h"

namespace spire::ptx::testing {
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

}  // namespace
}  // namespace spire::ptx::testing
