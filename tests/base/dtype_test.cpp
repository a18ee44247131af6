// The one element type (base/dtype.h): names round-trip, sizes are the in-memory ones, element conversions give the
// values a C++ cast or the IEEE formats give (expected values written out by hand, not computed by base/), and scalars
// pack as push constants and CUDA parameters need them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "base/dtype.h"
#include "base/features.h"

namespace spire {
namespace {

TEST(DType, NamesRoundTripAndUnknownNamesAreRefused) {
  for (DType t : kAllDTypes) EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
  EXPECT_EQ(dtype_name(DType::BF16), "bf16");
  EXPECT_EQ(dtype_name(DType::U32), "u32");
  EXPECT_FALSE(dtype_from_name("f8"));
  EXPECT_FALSE(dtype_from_name("F32"));
}

TEST(DType, BytesAndKinds) {
  EXPECT_EQ(dtype_bytes(DType::Bool), 1u);
  EXPECT_EQ(dtype_bytes(DType::F16), 2u);
  EXPECT_EQ(dtype_bytes(DType::BF16), 2u);
  EXPECT_EQ(dtype_bytes(DType::U32), 4u);
  EXPECT_EQ(dtype_bytes(DType::I64), 8u);
  EXPECT_TRUE(is_half(DType::BF16));
  EXPECT_FALSE(is_half(DType::F32));
  EXPECT_TRUE(is_int(DType::U32));
  EXPECT_FALSE(is_int(DType::Bool));
  EXPECT_FALSE(is_signed_int(DType::U32));
  EXPECT_TRUE(is_float(DType::F16));
}

TEST(DType, ElementsConvertAsTheFormatsSay) {
  uint8_t b[8];
  write_element(DType::F16, 1.0, b);
  EXPECT_EQ(b[0] | (b[1] << 8), 0x3C00);  // IEEE binary16 1.0
  write_element(DType::BF16, -2.0, b);
  EXPECT_EQ(b[0] | (b[1] << 8), 0xC000);  // the top half of f32 -2.0 (0xC0000000)
  write_element(DType::F16, 65520.0, b);  // rounds past the largest f16: infinity
  EXPECT_EQ(b[0] | (b[1] << 8), 0x7C00);
  EXPECT_TRUE(std::isinf(read_element(DType::F16, b)));
  write_element(DType::I32, -7.9, b);  // toward zero, as a C++ cast
  EXPECT_EQ(read_element(DType::I32, b), -7.0);
  write_element(DType::Bool, 0.25, b);
  EXPECT_EQ(b[0], 1);
  b[0] = 0xF8;  // a bool nobody wrote (the poison) reads as what it is, not as true
  EXPECT_EQ(read_element(DType::Bool, b), 248.0);
  const int64_t big = (int64_t(1) << 40) + 3;
  std::memcpy(b, &big, 8);
  EXPECT_EQ(read_element(DType::I64, b), double(big));
}

TEST(DType, ConvertElementsCopiesEqualTypesAndConvertsOthers) {
  const float in[3] = {1.5f, -0.0f, 3.0f};
  double out[3];
  convert_elements(in, DType::F32, out, DType::F64, 3);
  EXPECT_EQ(out[0], 1.5);
  EXPECT_TRUE(std::signbit(out[1]));
  float back[3];
  convert_elements(in, DType::F32, back, DType::F32, 3);
  EXPECT_EQ(std::memcmp(in, back, sizeof in), 0);
  const uint8_t bools[2] = {0, 1};
  uint32_t words[2] = {7, 7};
  convert_elements(bools, DType::Bool, words, DType::U32, 2);  // the device form of bools
  EXPECT_EQ(words[0], 0u);
  EXPECT_EQ(words[1], 1u);
}

TEST(DType, ScalarsPackEachAlignedToItsSize) {
  // u32 at 0, f64 at 8 (aligned up from 4), f16 at 16, i32 at 20: 24 bytes.
  const std::vector<DType> t = {DType::U32, DType::F64, DType::F16, DType::I32};
  EXPECT_EQ(packed_offsets(t), (std::vector<uint32_t>{0, 8, 16, 20}));
  EXPECT_EQ(packed_block_bytes(t), 24u);
  EXPECT_EQ(packed_block_bytes({DType::F16}), 4u);  // whole words
  EXPECT_EQ(packed_block_bytes({}), 0u);
}

TEST(Features, NamesAndTypesTheyNeed) {
  EXPECT_EQ(features_to_string(Features(Feature::Float64) | Feature::Int64), "float64, int64");
  EXPECT_EQ(features_to_string(Features()), "none");
  EXPECT_TRUE(features_for_type(DType::BF16).has(Feature::BFloat16));
  EXPECT_TRUE(features_for_type(DType::F32).empty());
}

}  // namespace
}  // namespace spire
