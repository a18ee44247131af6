// conv2d and its input and weight gradients on every device, over geometries that exercise each index
// path: LeNet's two layers, stride 2 with padding and odd sizes, dilation 2, groups 2, depthwise, unequal
// stride/dilation per axis, 1x1 kernels, a window too large to unroll (8x8 = 64 taps), windows that tile
// raggedly or exceed a tap block (35 taps, 34 columns), and f64.
//
// Tolerance: every result is a dot product (over Cin/groups x kh x kw, or Cout/groups x taps, or N x Ho x Wo
// for the weight gradient), so the f32 error is bounded relative to the same op evaluated on |inputs|:
// 1e-5 of it (the longest sum here, 8*28*28 = 6272 terms, is summed in ~25-term runs then a tree, whose
// rounding stays well below that); f64: 1e-12.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>

#include "tests/kernels/device_run.h"
#include "tests/kernels/op_check.h"

namespace conv2d_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;

namespace {

enum class ConvOp { Forward, GradInput, GradWeight };

struct ConvCase {
  std::string name;
  graph::Shape x, w;
  graph::Conv2dOptions opt;
  graph::DType dtype = graph::DType::F32;
};

std::vector<ConvCase> conv_cases() {
  using O = graph::Conv2dOptions;
  return {
      {"lenet1", {8, 1, 28, 28}, {6, 1, 5, 5}, O{.padding = {2, 2}}},
      {"lenet2", {8, 6, 14, 14}, {16, 6, 5, 5}, O{.padding = {2, 2}}},
      // Batch 16: enough rows (>= 1024) for the one-row-per-invocation forms of the forward and input gradient.
      {"lenet2_batch16", {16, 6, 14, 14}, {16, 6, 5, 5}, O{.padding = {2, 2}}},
      {"rows_stride2_f64", {16, 8, 12, 13}, {12, 8, 3, 3}, O{.stride = {2, 2}, .padding = {1, 1}}, graph::DType::F64},
      {"stride2_pad1", {2, 3, 9, 11}, {4, 3, 3, 3}, O{.stride = {2, 2}, .padding = {1, 1}}},
      {"dilation2", {1, 2, 13, 10}, {3, 2, 3, 3}, O{.padding = {2, 2}, .dilation = {2, 2}}},
      {"groups2", {2, 4, 7, 8}, {6, 2, 3, 3}, O{.padding = {1, 1}, .groups = 2}},
      {"depthwise", {1, 4, 6, 6}, {4, 1, 3, 3}, O{.padding = {1, 1}, .groups = 4}},
      {"mixed_axes", {2, 3, 10, 7}, {5, 3, 3, 2}, O{.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}}},
      {"big_window", {1, 2, 12, 12}, {2, 2, 8, 8}, O{.padding = {3, 3}}},
      // 5x7 = 35 taps: the weight gradient's tap blocks (4 rows x 7 columns) leave a ragged last block.
      {"ragged_taps", {2, 2, 12, 14}, {3, 2, 5, 7}, O{.padding = {1, 2}}},
      // 40 columns: wider than one tap block, and rows too wide for a per-invocation row of outputs.
      {"wide", {1, 1, 3, 40}, {2, 1, 2, 34}, O{.padding = {0, 1}}},
      {"all_at_once", {2, 6, 11, 9}, {4, 3, 3, 3}, O{.stride = {3, 2}, .padding = {2, 1}, .dilation = {2, 1}, .groups = 2}},
      {"pointwise", {3, 5, 4, 4}, {7, 5, 1, 1}, O{}},
      {"stride2_pad1_f64", {2, 3, 9, 11}, {4, 3, 3, 3}, O{.stride = {2, 2}, .padding = {1, 1}}, graph::DType::F64},
      {"groups2_f64", {2, 4, 7, 8}, {6, 2, 3, 3}, O{.padding = {1, 1}, .groups = 2}, graph::DType::F64},
  };
}

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

std::string_view op_label(ConvOp op) {
  return op == ConvOp::Forward ? "forward" : op == ConvOp::GradInput ? "grad_input" : "grad_weight";
}

using ConvParam = std::tuple<std::string, ConvCase, ConvOp>;
class Conv2dOnDevice : public testing::TestWithParam<ConvParam> {};

TEST_P(Conv2dOnDevice, MatchesTheReference) {
  const auto& [device_id, c, op] = GetParam();
  graph::Shape y_shape;
  {
    graph::Graph shapes;
    y_shape = shapes.type(shapes.conv2d(shapes.input("x", c.dtype, c.x), shapes.input("w", c.dtype, c.w), c.opt)).shape;
  }
  graph::Graph g;
  std::map<std::string, graph::Tensor> inputs;
  switch (op) {
    case ConvOp::Forward: {
      auto x = g.input("x", c.dtype, c.x), w = g.input("w", c.dtype, c.w);
      g.output("y", g.conv2d(x, w, c.opt));
      inputs = {{"x", random_tensor(c.dtype, c.x, 11)}, {"w", random_tensor(c.dtype, c.w, 12)}};
      break;
    }
    case ConvOp::GradInput: {
      auto gy = g.input("gy", c.dtype, y_shape), w = g.input("w", c.dtype, c.w);
      g.output("gx", g.conv2d_grad_input(gy, w, c.opt, c.x));
      inputs = {{"gy", random_tensor(c.dtype, y_shape, 13)}, {"w", random_tensor(c.dtype, c.w, 14)}};
      break;
    }
    case ConvOp::GradWeight: {
      auto gy = g.input("gy", c.dtype, y_shape), x = g.input("x", c.dtype, c.x);
      g.output("gw", g.conv2d_grad_weight(gy, x, c.opt, c.w));
      inputs = {{"gy", random_tensor(c.dtype, y_shape, 15)}, {"x", random_tensor(c.dtype, c.x, 16)}};
      break;
    }
  }
  Tolerance tol = c.dtype == graph::DType::F64 ? Tolerance{1e-12, 0} : Tolerance{1e-5, 0};
  check_against_reference(device_id, g, inputs, tol, Scale::AbsoluteInputs);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, Conv2dOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids()), testing::ValuesIn(conv_cases()),
                                          testing::Values(ConvOp::Forward, ConvOp::GradInput, ConvOp::GradWeight)),
                         [](const testing::TestParamInfo<ConvParam>& p) {
                           return fmt::format("{}_{}_{}", test_name_of(std::get<0>(p.param)), std::get<1>(p.param).name,
                                              op_label(std::get<2>(p.param)));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conv2dOnDevice);

}  // namespace
}  // namespace conv2d_test
