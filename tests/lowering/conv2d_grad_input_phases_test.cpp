// A strided convolution's input gradient by phases (kernels/conv2d_gemm_kernels.h): the phases'
// arithmetic against values worked out by hand, the lowering's choice of them for resnet18's strided layers (and not
// for a dilated one), and their results on every device against the float64 evaluator, with the executor's poisoned
// buffers showing any element no phase writes.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "kernels/conv2d_gemm_kernels.h"
#include "lowering/plan.h"
#include "tests/lowering/device_list.h"
#include "tests/lowering/plan_queries.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/random_tensor.h"

namespace conv2d_grad_input_phases_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Graph;
using lowering::heavy::GradInputPhase;

namespace {

lowering::heavy::Conv2dShape shape(std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> stride,
                                   std::vector<int64_t> pad, std::vector<int64_t> dilation = {1, 1}) {
  return lowering::heavy::conv2d_shape(x, w, stride, pad, dilation, 1);
}

// resnet18's first layer, 7x7 at stride 2 with padding 3 over 224 x 224: even rows h = 2q are reached by tap rows 1, 3,
// 5 (h + 3 - kh even) from output rows q + 1 - j; odd rows by tap rows 0, 2, 4, 6 from output rows q + 2 - j.
TEST(Conv2dGradInputPhases, FollowTheStrideAndPadding) {
  const auto phases = lowering::heavy::conv2d_grad_input_phases(shape({1, 3, 224, 224}, {64, 3, 7, 7}, {2, 2}, {3, 3}));
  ASSERT_EQ(phases.size(), 4u);
  const GradInputPhase& even = phases[0];
  EXPECT_EQ(even.rh, 0u);
  EXPECT_EQ(even.rw, 0u);
  EXPECT_EQ(even.qh, 112u);
  EXPECT_EQ(even.ah, 1u);
  EXPECT_EQ(even.th, 3u);
  EXPECT_EQ(even.bh, 1u);
  const GradInputPhase& odd = phases[3];
  EXPECT_EQ(odd.rh, 1u);
  EXPECT_EQ(odd.rw, 1u);
  EXPECT_EQ(odd.qw, 112u);
  EXPECT_EQ(odd.aw, 0u);
  EXPECT_EQ(odd.tw, 4u);
  EXPECT_EQ(odd.bw, 2u);
  // A 2x2 window at stride 3 over 10 rows: rows 0, 3, 6, 9 (tap 0), 1, 4, 7 (tap 1), 2, 5, 8 (no tap: zeros).
  const auto gaps = lowering::heavy::conv2d_grad_input_phases(shape({1, 1, 10, 10}, {1, 1, 2, 2}, {3, 3}, {0, 0}));
  ASSERT_EQ(gaps.size(), 9u);
  EXPECT_EQ(gaps[0].qh, 4u);
  EXPECT_EQ(gaps[0].th, 1u);
  EXPECT_EQ(gaps[3].qh, 3u);
  EXPECT_EQ(gaps[3].ah, 1u);
  EXPECT_EQ(gaps[3].th, 1u);
  EXPECT_EQ(gaps[6].qh, 3u);
  EXPECT_EQ(gaps[6].th, 0u);
  // One row, fewer than the stride: the phases of odd rows have no positions and are left out.
  EXPECT_EQ(lowering::heavy::conv2d_grad_input_phases(shape({1, 1, 1, 5}, {1, 1, 1, 1}, {2, 2}, {0, 0})).size(), 2u);
  EXPECT_THROW(lowering::heavy::conv2d_grad_input_phases(shape({1, 1, 9, 9}, {1, 1, 3, 3}, {2, 2}, {1, 1}, {2, 2})),
               std::invalid_argument);
}

Graph grad_input_graph(graph::Shape x, graph::Shape w, graph::Conv2dOptions o, DType t = DType::F32) {
  Graph probe;
  const graph::Shape y = probe.type(probe.conv2d(probe.input("x", t, x), probe.input("w", t, w), o)).shape;
  Graph g;
  auto gy = g.input("gy", t, y);  // first: inputs() lists it first
  auto weights = g.input("w", t, w);
  g.output("gx", g.conv2d_grad_input(gy, weights, o, x));
  return g;
}

int count_with(const std::vector<std::string>& names, const std::string& part) {
  return int(std::count_if(names.begin(), names.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; }));
}

// resnet18's strided layers at batch 64 take every phase in one launch on an H100 (the 1x1 downsampling, where 3 of 4
// phases get no tap: a zero fill, then the reached phase's launch); a dilated strided convolution keeps the one GEMM or
// the direct kernel.
TEST(Conv2dGradInputPhases, AreWhatTheLoweringRunsForResnetsStridedLayers) {
  using O = graph::Conv2dOptions;
  const rt::DeviceInfo h100 = testing_support::h100_like_target();
  for (const auto& [x, w, o] : {std::tuple{graph::Shape{64, 64, 56, 56}, graph::Shape{128, 64, 3, 3}, O{.stride = {2, 2}, .padding = {1, 1}}},
                                std::tuple{graph::Shape{64, 64, 56, 56}, graph::Shape{128, 64, 1, 1}, O{.stride = {2, 2}}},
                                std::tuple{graph::Shape{64, 256, 14, 14}, graph::Shape{512, 256, 3, 3}, O{.stride = {2, 2}, .padding = {1, 1}}}}) {
    auto names = lowering::testing_support::kernels_of(lowering::lower(grad_input_graph(x, w, o), h100));
    // A 1x1 window reaches one phase of four: a zero fill of grad_x first, then that phase's GEMM alone.
    if (w[2] == 1) {
      ASSERT_EQ(names.size(), 2u) << ::testing::PrintToString(names);
      EXPECT_EQ(names[0], "conv2d_grad_input_n64_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1_f32_zeros");
      EXPECT_NE(names[1].find("_phases_reached"), std::string::npos) << names[1];
      names.erase(names.begin());
    }
    ASSERT_EQ(names.size(), 1u) << ::testing::PrintToString(names);
    EXPECT_NE(names[0].find("_phases"), std::string::npos) << names[0];
    EXPECT_EQ(names[0].find("_phases_s"), std::string::npos) << names[0] << ": split at batch 64";
    if (w[2] == 3) {
      EXPECT_EQ(names[0].find("_reached"), std::string::npos) << names[0] << ": every phase has taps";
    }
  }
  const auto dilated = lowering::testing_support::kernels_of(lowering::lower(
      grad_input_graph({64, 64, 56, 56}, {128, 64, 3, 3}, O{.stride = {2, 2}, .padding = {2, 2}, .dilation = {2, 2}}), h100));
  EXPECT_EQ(count_with(dilated, "_phase"), 0) << ::testing::PrintToString(dilated);
}

// Results against the float64 evaluator: each element within 1e-5 of the same gradient computed from |grad_y| and
// |w| (its sum of absolute terms), which bounds an f32 sum's rounding.
class Conv2dGradInputPhasesOnDevice : public ::testing::TestWithParam<std::string> {};

TEST_P(Conv2dGradInputPhasesOnDevice, MatchTheFloat64Evaluator) {
  using O = graph::Conv2dOptions;
  auto dev = rt::open_device(GetParam());
  // 64 input channels and enough positions per phase (2 x 32 x 32, 4 x 22 x 24, 4 x 23 x 22) that the heuristic takes
  // the phases; an odd-sized 7x5 window at strides 3 and 2 (phases of 1 to 3 tap rows); a 2x2 window at stride 3
  // (phases of no tap).
  const std::vector<std::tuple<graph::Shape, graph::Shape, O>> cases{
      {{2, 64, 64, 64}, {16, 64, 3, 3}, O{.stride = {2, 2}, .padding = {1, 1}}},
      {{4, 64, 66, 47}, {8, 64, 7, 5}, O{.stride = {3, 2}, .padding = {3, 2}}},
      {{4, 64, 67, 66}, {8, 64, 2, 2}, O{.stride = {3, 3}}},
  };
  for (const auto& [x, w, o] : cases) {
    const Graph g = grad_input_graph(x, w, o);
    const lowering::Plan plan = lowering::lower(g, dev->info());
    EXPECT_EQ(count_with(lowering::testing_support::kernels_of(plan), "_phases"), 1) << "the heuristic took no phases";
    const graph::Shape y = g.type(g.inputs()[0]).shape;
    std::map<std::string, graph::Tensor> in{{"gy", testing_support::uniform_tensor(y, 21, DType::F32)},
                                            {"w", testing_support::uniform_tensor(w, 22, DType::F32)}};
    auto abs_in = in;
    for (auto& [name, t] : abs_in)
      for (double& v : t.data) v = std::abs(v);
    const graph::Tensor want = graph::evaluate(g, in, DType::F64).at("gx");
    const graph::Tensor bound = graph::evaluate(g, abs_in, DType::F64).at("gx");
    auto exe = lowering::compile(g, *dev);
    for (const auto& [name, t] : in) exe->set(name, t);
    exe->step();
    const graph::Tensor got = exe->get("gx");
    ASSERT_EQ(got.shape, want.shape);
    int bad = 0;
    for (size_t i = 0; i < want.data.size() && bad < 5; ++i)
      if (!(std::abs(got.data[i] - want.data[i]) <= 1e-5 * bound.data[i] + 1e-30)) {
        ADD_FAILURE() << "element " << i << ": " << got.data[i] << ", want " << want.data[i];
        ++bad;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, Conv2dGradInputPhasesOnDevice, ::testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& info) { return lowering::testing_support::test_name(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conv2dGradInputPhasesOnDevice);

}  // namespace
}  // namespace conv2d_grad_input_phases_test
