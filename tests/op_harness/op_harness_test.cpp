// The cross-backend op harness (op_harness/op_harness.h) as GoogleTests: one test per case and device, every
// op of the graph IR forward and backward against the float64 reference evaluator, with the tolerance
// op table entries (ir/graph/ops/). Validation layer on; any message fails.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "lowering/executable.h"
#include "op_harness/op_harness.h"
#include "ir/graph/op_table.h"
#include "runtime/device.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/lowering/device_list.h"

using namespace spire;

namespace {

struct Param {
  std::string device;
  size_t index;
};

std::vector<Param> params() {
  std::vector<Param> out;
  for (const auto& id : lowering::testing_support::device_ids())
    for (size_t i = 0; i < harness::op_cases().size(); ++i) out.push_back({id, i});
  return out;
}

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.device << " case " << p.index << " (" << graph::op_name(harness::op_cases()[p.index].op) << " "
      << harness::op_cases()[p.index].label << ")";
}

class OpOnDevice : public testing::TestWithParam<Param> {};

// Every row of a case passes within its tolerance (a skipped row skips the test, with its reason), and the Vulkan
// validation layer reported nothing since `validation_before`.
void expect_rows_pass(const std::vector<harness::OpRow>& rows, uint64_t validation_before) {
  ASSERT_FALSE(rows.empty());
  bool skipped = false;
  for (const auto& r : rows) {
    SCOPED_TRACE(harness::format_row(r));
    if (r.outcome == harness::Outcome::Skip) {
      skipped = true;
      continue;
    }
    EXPECT_EQ(r.outcome, harness::Outcome::Pass) << r.note;
    EXPECT_LE(r.max_error, r.tolerance);
  }
  EXPECT_EQ(rt::vulkan::validation_message_count(), validation_before) << "the Vulkan validation layer reported messages";
  if (skipped) GTEST_SKIP() << rows[0].note;
}

TEST_P(OpOnDevice, MatchesTheFloat64Reference) {
  const auto& c = harness::op_cases()[GetParam().index];
  auto dev = rt::open_device(GetParam().device);
  uint64_t before = rt::vulkan::validation_message_count();
  auto rows = harness::run_op_case(c, *dev, 1);
  expect_rows_pass(rows, before);
}

std::string name(const testing::TestParamInfo<Param>& p) {
  const auto& c = harness::op_cases()[p.param.index];
  return fmt::format("{}_{}_{}", lowering::testing_support::test_name(p.param.device), graph::op_name(c.op), p.param.index);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, OpOnDevice, testing::ValuesIn(params()), name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpOnDevice);

// The matmul and conv2d cases under the tf32 policy on every device, held to the TF32 bound of each dot product
// (op_harness.h): on lavapipe (no TF32 matrices) they run as fp32, which the bound holds too; on cuda:0 of a GPU as
// TF32 (the mock driver's run is tests/runtime/cuda/cuda_op_harness_mock_test.cpp).
std::vector<Param> dot_product_params() {
  std::vector<Param> out;
  for (const Param& p : params()) {
    const graph::OpKind op = harness::op_cases()[p.index].op;
    if (op == graph::OpKind::Matmul || op == graph::OpKind::Conv2d) out.push_back(p);
  }
  return out;
}

class DotProductOpUnderTf32 : public testing::TestWithParam<Param> {};

TEST_P(DotProductOpUnderTf32, IsWithinTheTf32BoundOfTheFloat64Reference) {
  const auto& c = harness::op_cases()[GetParam().index];
  auto dev = rt::open_device(GetParam().device);
  const uint64_t before = rt::vulkan::validation_message_count();
  const auto rows = harness::run_op_case(c, *dev, 1, Precision::Tf32);
  expect_rows_pass(rows, before);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, DotProductOpUnderTf32, testing::ValuesIn(dot_product_params()), name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DotProductOpUnderTf32);

// The f32 matmul and conv2d cases under the bf16 and f16 policies on every device, results and gradients held to the
// policy's dot-product bound (base/precision.h: operands and result stored in half, f32 sums). A device without the
// half type runs them as fp32, which the bound holds too.
struct HalfParam {
  Param case_on;
  Precision precision;
};

std::vector<HalfParam> half_policy_params() {
  std::vector<HalfParam> out;
  for (const Param& p : dot_product_params()) {
    bool f32 = true;
    for (const auto& in : harness::op_cases()[p.index].inputs) f32 &= in.type.dtype == graph::DType::F32;
    if (!f32) continue;
    for (Precision precision : {Precision::Bf16, Precision::F16}) out.push_back({p, precision});
  }
  return out;
}

class DotProductOpUnderHalfPolicy : public testing::TestWithParam<HalfParam> {};

TEST_P(DotProductOpUnderHalfPolicy, IsWithinTheHalfBoundOfTheFloat64Reference) {
  const auto& c = harness::op_cases()[GetParam().case_on.index];
  auto dev = rt::open_device(GetParam().case_on.device);
  const uint64_t before = rt::vulkan::validation_message_count();
  const auto rows = harness::run_op_case(c, *dev, 1, GetParam().precision);
  ASSERT_FALSE(rows.empty());
  for (const auto& r : rows) {
    SCOPED_TRACE(harness::format_row(r));
    EXPECT_EQ(r.outcome, harness::Outcome::Pass) << r.note;
  }
  EXPECT_EQ(rt::vulkan::validation_message_count(), before) << "the Vulkan validation layer reported messages";
}

INSTANTIATE_TEST_SUITE_P(AllDevices, DotProductOpUnderHalfPolicy, testing::ValuesIn(half_policy_params()),
                         [](const testing::TestParamInfo<HalfParam>& p) {
                           return fmt::format("{}_{}", name(testing::TestParamInfo<Param>(p.param.case_on, p.index)),
                                              precision_name(p.param.precision));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DotProductOpUnderHalfPolicy);

// Under bf16 and f16 the harness checks only the products and convolutions, and says so for the other ops.
TEST(OpHarness, HalfPoliciesSkipOtherOpsSayingWhy) {
  auto devices = lowering::testing_support::device_ids();
  if (devices.empty()) GTEST_SKIP() << "no device";
  auto dev = rt::open_device(devices[0]);
  for (const auto& c : harness::op_cases()) {
    if (c.op != graph::OpKind::Relu || c.inputs[0].type.dtype != graph::DType::F32) continue;
    const auto rows = harness::run_op_case(c, *dev, 1, Precision::Bf16);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].outcome, harness::Outcome::Skip);
    EXPECT_NE(rows[0].note.find("dot-product bound"), std::string::npos) << rows[0].note;
    return;
  }
  FAIL() << "no f32 relu case";
}

TEST(OpHarness, EveryOpOfTheGraphIrHasACase) {
  std::set<graph::OpKind> covered;
  for (const auto& c : harness::op_cases()) covered.insert(c.op);
  for (int k = 0; k < graph::op_count(); ++k) {
    auto op = graph::OpKind(k);
    // Input leaves are what every case feeds; parameters and states are read the same way (executor tests).
    if (op == graph::OpKind::Input || op == graph::OpKind::Parameter || op == graph::OpKind::State) continue;
    EXPECT_TRUE(covered.count(op)) << graph::op_name(op) << " has no harness case";
  }
}

TEST(OpHarness, EveryToleranceHasAReason) {
  for (const graph::OpInfo& info : graph::op_table())
    for (bool backward : {false, true}) {
      const auto& t = backward ? info.backward : info.forward;
      EXPECT_FALSE(t.why.empty()) << info.name << (backward ? " backward" : " forward");
      EXPECT_LT(t.f32, 1e-3) << "a tolerance this loose would hide wrong results";
      EXPECT_LE(t.f64, t.f32);
    }
}

// The harness must be able to fail: a wrong element, a NaN, and an output no kernel wrote (the executor's
// poison) are all beyond every tolerance.
TEST(OpHarness, ErrorMeasureCatchesWrongNanAndUnwrittenElements) {
  using graph::DType;
  auto want = graph::Tensor::from(DType::F32, {4}, {1, -2, 3, 0.5});
  EXPECT_EQ(harness::max_norm_error(want, want), 0);
  auto off = want;
  off.data[1] = -2.01;
  EXPECT_NEAR(harness::max_norm_error(off, want), 0.01 / 3, 1e-12);
  auto nan = want;
  nan.data[3] = std::nan("");
  EXPECT_TRUE(std::isinf(harness::max_norm_error(nan, want)));
  // Small results are judged absolutely (op_tolerances.h): 1e-9 off on 1e-6 is fine, 1e-3 off is not.
  auto tiny = graph::Tensor::from(DType::F32, {1}, {1e-6});
  EXPECT_LT(harness::max_norm_error(graph::Tensor::from(DType::F32, {1}, {1e-6 + 1e-9}), tiny), 1e-8);
  EXPECT_GT(harness::max_norm_error(graph::Tensor::from(DType::F32, {1}, {1e-3}), tiny), 1e-4);

  for (const auto& id : lowering::testing_support::device_ids()) {
    auto dev = rt::open_device(id);
    // Never stepped: every output still holds the poison written at allocation.
    graph::Graph g;
    auto x = g.input("x", DType::F32, {33});
    g.output("y", g.exp(x));
    g.output("flags", g.compare(x, g.scalar(0, DType::F32), graph::CompareMode::Lt));
    auto exe = lowering::compile(g, *dev);
    EXPECT_TRUE(std::isinf(harness::max_norm_error(exe->get("y"), graph::Tensor(DType::F32, {33}, 1.0))));
    EXPECT_GT(harness::max_norm_error(exe->get("flags"), graph::Tensor(DType::Bool, {33}, 0.0)), 1.0)
        << "an unwritten bool must not read as 0 or 1";
  }
}

TEST(OpHarness, ACaseThatCannotBeBuiltFailsWithTheReason) {
  for (const auto& id : lowering::testing_support::device_ids()) {
    auto dev = rt::open_device(id);
    harness::OpCase broken;
    broken.op = graph::OpKind::Matmul;
    broken.label = "f32[8] (wrong on purpose)";
    broken.inputs = {{{graph::DType::F32, {8}}, harness::Draw::Uniform, 1, 2}};
    broken.build = [](graph::Graph& g, const std::vector<graph::Value>& x) { return g.matmul(x[0], x[0]); };
    auto rows = harness::run_op_case(broken, *dev);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].outcome, harness::Outcome::Fail);
    EXPECT_NE(rows[0].note.find("rank"), std::string::npos) << rows[0].note;
  }
}

}  // namespace
