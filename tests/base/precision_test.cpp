// base/precision.h: the policy's names, their parsing (a wrong one names the choices) and the documented bound.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "base/precision.h"

namespace spire {
namespace {

TEST(Precision, NamesRoundTripAndFp32IsTheFirst) {
  for (Precision p : {Precision::Fp32, Precision::Tf32, Precision::Bf16, Precision::F16})
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  EXPECT_EQ(parse_precision("f32"), Precision::Fp32);  // spelled as bf16 and f16 are
  EXPECT_EQ(precision_choices(), "fp32|tf32|bf16|f16");
  EXPECT_EQ(Precision{}, Precision::Fp32);  // a value-initialized policy is strict
}

TEST(Precision, AWrongNameIsRefusedWithTheChoices) {
  for (const char* bad : {"tf33", "", "FP32", "float32"}) {
    try {
      (void)parse_precision(bad);
      FAIL() << "'" << bad << "' was accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("fp32|tf32|bf16|f16"), std::string::npos) << what;
    }
  }
}

// The bound of docs/PRECISION.md, from its parts: b = 2 u + u^2 for the rounded inputs (u = 2^-11 for TF32's and f16's
// 10 mantissa bits, 2^-8 for bf16's 7, none for f32) and K 2^-24 for the f32 sums; the half policies also store the
// result in half, which adds u (1 + b).
TEST(Precision, DotBoundIsTheInputRoundingPlusTheF32Sums) {
  const double u = std::ldexp(1.0, -11), f32 = std::ldexp(1.0, -24);
  EXPECT_DOUBLE_EQ(precision_dot_bound(Precision::Tf32, 100), 2 * u + u * u + 100 * f32);
  EXPECT_DOUBLE_EQ(precision_dot_bound(Precision::Fp32, 100), 100 * f32);
  const double ub = std::ldexp(1.0, -8), bf16_inputs = 2 * ub + ub * ub + f32;
  EXPECT_DOUBLE_EQ(precision_dot_bound(Precision::Bf16, 1), bf16_inputs + ub * (1 + bf16_inputs));
  const double f16_inputs = 2 * u + u * u + f32;
  EXPECT_DOUBLE_EQ(precision_dot_bound(Precision::F16, 1), f16_inputs + u * (1 + f16_inputs));
}

}  // namespace
}  // namespace spire
