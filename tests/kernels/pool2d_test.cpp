// max_pool2d, avg_pool2d and their gradients on every device: LeNet's 2x2 pooling, padding with odd sizes,
// overlapping windows, rectangular windows, a window too large to unroll (8x8), ties (small integer inputs
// and an all-equal input: the gradient must go to each window's FIRST maximal element in row-major order),
// negative inputs with padding (a padded position must never win), and f64.
//
// Tolerances: max_pool2d is exact (it selects an input). max_pool2d_grad sums at most a few gradients per
// element: 1e-6 relative plus 1e-6 absolute (values are O(1)). avg_pool2d and its gradient are linear, so
// their error is bounded relative to the op evaluated on |inputs|: 1e-6 of it. f64: 1e-13.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>

#include "tests/kernels/device_run.h"
#include "tests/kernels/op_check.h"

namespace pool2d_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;

namespace {

enum class PoolOp { Max, MaxGrad, Avg, AvgGrad };
enum class Values { Random, SmallInts, AllEqual, Negative };

struct PoolCase {
  std::string name;
  graph::Shape x;
  graph::Pool2dOptions opt;
  Values values = Values::Random;
  graph::DType dtype = graph::DType::F32;
};

std::vector<PoolCase> pool_cases() {
  using O = graph::Pool2dOptions;
  return {
      {"lenet", {8, 6, 28, 28}, O{}},
      {"k3_s2_p1_odd", {2, 3, 9, 7}, O{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}},
      {"overlapping", {1, 2, 8, 8}, O{.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}}},
      {"rectangular", {1, 2, 11, 11}, O{.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}}},
      {"big_window", {1, 1, 16, 16}, O{.kernel = {8, 8}, .stride = {4, 4}, .padding = {4, 4}}},
      {"ties_overlapping", {2, 2, 9, 9}, O{.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}}, Values::SmallInts},
      {"ties_2x2", {2, 3, 8, 8}, O{}, Values::SmallInts},
      // Windows tiling the input (the gradient writes whole windows) with 3x2 windows, and 2x2 ones leaving a row and
      // a column uncovered (the per-element gradient, zeros there).
      {"tiling_3x2", {2, 2, 9, 6}, O{.kernel = {3, 2}, .stride = {3, 2}}, Values::SmallInts},
      {"leftover_2x2", {1, 2, 7, 9}, O{}},
      {"all_equal", {1, 2, 7, 7}, O{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, Values::AllEqual},
      {"negative_padded", {1, 2, 6, 5}, O{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, Values::Negative},
      {"k3_s2_p1_f64", {2, 3, 9, 7}, O{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}, Values::Random,
       graph::DType::F64},
  };
}

void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.name; }

std::string_view op_label(PoolOp op) {
  switch (op) {
    case PoolOp::Max: return "max";
    case PoolOp::MaxGrad: return "max_grad";
    case PoolOp::Avg: return "avg";
    case PoolOp::AvgGrad: return "avg_grad";
  }
  return "?";
}

graph::Tensor pool_input(const PoolCase& c) {
  switch (c.values) {
    case Values::Random: return random_tensor(c.dtype, c.x, 21);
    case Values::SmallInts: return random_ints(c.dtype, c.x, 22, 0, 2);
    case Values::AllEqual: return graph::Tensor(c.dtype, c.x, 1.0);
    case Values::Negative: return random_tensor(c.dtype, c.x, 23, -5.0, -1.0);
  }
  return {};
}

using PoolParam = std::tuple<std::string, PoolCase, PoolOp>;
class Pool2dOnDevice : public testing::TestWithParam<PoolParam> {};

TEST_P(Pool2dOnDevice, MatchesTheReference) {
  const auto& [device_id, c, op] = GetParam();
  graph::Shape y_shape;
  {
    graph::Graph shapes;
    y_shape = shapes.type(shapes.max_pool2d(shapes.input("x", c.dtype, c.x), c.opt)).shape;
  }
  const bool f64 = c.dtype == graph::DType::F64;
  graph::Graph g;
  std::map<std::string, graph::Tensor> inputs;
  Tolerance tol;
  Scale scale = Scale::Reference;
  switch (op) {
    case PoolOp::Max:
      g.output("y", g.max_pool2d(g.input("x", c.dtype, c.x), c.opt));
      inputs = {{"x", pool_input(c)}};
      tol = {0, 0};
      break;
    case PoolOp::MaxGrad: {
      auto gy = g.input("gy", c.dtype, y_shape), x = g.input("x", c.dtype, c.x);
      g.output("gx", g.max_pool2d_grad(gy, x, c.opt));
      inputs = {{"gy", random_tensor(c.dtype, y_shape, 24)}, {"x", pool_input(c)}};
      tol = f64 ? Tolerance{1e-13, 1e-13} : Tolerance{1e-6, 1e-6};
      break;
    }
    case PoolOp::Avg:
      g.output("y", g.avg_pool2d(g.input("x", c.dtype, c.x), c.opt));
      inputs = {{"x", pool_input(c)}};
      tol = f64 ? Tolerance{1e-13, 0} : Tolerance{1e-6, 0};
      scale = Scale::AbsoluteInputs;
      break;
    case PoolOp::AvgGrad:
      g.output("gx", g.avg_pool2d_grad(g.input("gy", c.dtype, y_shape), c.opt, c.x));
      inputs = {{"gy", random_tensor(c.dtype, y_shape, 25)}};
      tol = f64 ? Tolerance{1e-13, 0} : Tolerance{1e-6, 0};
      scale = Scale::AbsoluteInputs;
      break;
  }
  check_against_reference(device_id, g, inputs, tol, scale);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, Pool2dOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids()), testing::ValuesIn(pool_cases()),
                                          testing::Values(PoolOp::Max, PoolOp::MaxGrad, PoolOp::Avg, PoolOp::AvgGrad)),
                         [](const testing::TestParamInfo<PoolParam>& p) {
                           return fmt::format("{}_{}_{}", test_name_of(std::get<0>(p.param)), std::get<1>(p.param).name,
                                              op_label(std::get<2>(p.param)));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Pool2dOnDevice);

}  // namespace
}  // namespace pool2d_test
