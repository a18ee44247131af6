// softmax, log_softmax, cross_entropy and cross_entropy_grad on every device.
//
// softmax/log_softmax: every axis of a rank-3 tensor (strided rows), LeNet's [8, 10], axes long enough for a
// workgroup per row (300, 700 with an inner stride, 1000: kept in registers; 5000: read in each pass), a one-element
// row, and logits spread over [-50, 100] (exp would overflow without the max subtraction). cross_entropy(+grad): i32 and i64 labels,
// N above the 256 invocations of the loss's workgroup, one row of one class, and an out-of-range label.
//
// Tolerances (f32; each row of length L): a softmax value is exp(x - max) / sum, where exp and x - max round
// to a few ulp and the sum adds L terms: relative 1e-5 + L * 1.2e-7, plus 1e-9 absolute for values that
// underflow. log_softmax = x - max - log(sum): absolute 1e-5 + L * 1.2e-7 plus 1e-5 relative.
// cross_entropy: 1e-5 relative and absolute (a mean of O(1) values). cross_entropy_grad: 1e-5 relative
// plus 1e-5 * |grad| / N absolute.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>

#include <fmt/format.h>

#include "tests/kernels/device_run.h"
#include "tests/kernels/op_check.h"
#include "tests/support/named_ops.h"

namespace softmax_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;

namespace {

struct SoftmaxCase {
  std::string name;
  graph::Shape shape;
  int64_t axis;
  double lo = -3, hi = 3;
};

std::vector<SoftmaxCase> softmax_cases() {
  return {
      {"lenet_8x10", {8, 10}, 1},
      {"rank3_axis0", {4, 5, 6}, 0},
      {"rank3_axis1", {4, 5, 6}, 1},
      {"rank3_axis2", {4, 5, 6}, 2},
      {"long_row", {3, 300}, 1},
      {"long_strided", {2, 700, 3}, 1},
      {"wide_1000", {5, 1000}, 1},
      {"row_5000_read_per_pass", {2, 5000}, 1},  // more than 8 elements per invocation: not kept in registers
      {"one_element", {1, 1}, 0},
      {"vector", {7}, 0},
      {"large_logits", {6, 33}, 1, -50, 100},
  };
}

void PrintTo(const SoftmaxCase& c, std::ostream* os) { *os << c.name; }

using SoftmaxParam = std::tuple<std::string, SoftmaxCase, bool>;
class SoftmaxOnDevice : public testing::TestWithParam<SoftmaxParam> {};

TEST_P(SoftmaxOnDevice, MatchesTheReference) {
  const auto& [device_id, c, log] = GetParam();
  graph::Graph g;
  auto x = g.input("x", graph::DType::F32, c.shape);
  g.output("y", log ? log_softmax(g, x, c.axis) : softmax(g, x, c.axis));
  std::map<std::string, graph::Tensor> inputs{{"x", random_tensor(graph::DType::F32, c.shape, 31, c.lo, c.hi)}};
  double row_term = 1.2e-7 * double(c.shape[size_t(c.axis)]);
  Tolerance tol = log ? Tolerance{1e-5, 1e-5 + row_term} : Tolerance{1e-5 + row_term, 1e-9};
  check_against_reference(device_id, g, inputs, tol);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, SoftmaxOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids()), testing::ValuesIn(softmax_cases()), testing::Bool()),
                         [](const testing::TestParamInfo<SoftmaxParam>& p) {
                           return fmt::format("{}_{}_{}", test_name_of(std::get<0>(p.param)),
                                              std::get<2>(p.param) ? "log_softmax" : "softmax", std::get<1>(p.param).name);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SoftmaxOnDevice);

struct LossCase {
  std::string name;
  int64_t n, c;
  graph::DType labels = graph::DType::I32;
};

std::vector<LossCase> loss_cases() {
  return {
      {"lenet_8x10", 8, 10},
      {"i64_labels_37x5", 37, 5, graph::DType::I64},
      {"rows_over_workgroup_300x7", 300, 7},
      {"i64_600x3", 600, 3, graph::DType::I64},
      {"one_row_one_class", 1, 1},
      {"wide_4x100", 4, 100},
      {"workgroup_rows_5x300", 5, 300},
      {"workgroup_rows_3x1000_i64", 3, 1000, graph::DType::I64},
      {"workgroup_rows_2x5000_read_per_pass", 2, 5000},  // more than 8 logits per invocation: not kept in registers
  };
}

void PrintTo(const LossCase& c, std::ostream* os) { *os << c.name; }

using LossParam = std::tuple<std::string, LossCase, bool>;
class CrossEntropyOnDevice : public testing::TestWithParam<LossParam> {};

TEST_P(CrossEntropyOnDevice, MatchesTheReference) {
  const auto& [device_id, c, grad] = GetParam();
  graph::Graph g;
  auto logits = g.input("logits", graph::DType::F32, {c.n, c.c});
  auto labels = g.input("labels", c.labels, {c.n});
  std::map<std::string, graph::Tensor> inputs{{"logits", random_tensor(graph::DType::F32, {c.n, c.c}, 41, -3, 3)},
                                              {"labels", random_ints(c.labels, {c.n}, 42, 0, c.c - 1)}};
  Tolerance tol{1e-5, 1e-5};
  if (grad) {
    const double gv = 0.7;
    g.output("grad_logits", cross_entropy_grad(g, g.input("g", graph::DType::F32, {}), logits, labels));
    inputs["g"] = graph::Tensor::scalar(graph::DType::F32, gv);
    tol = {1e-5, 1e-5 * gv / double(c.n)};
  } else {
    g.output("loss", cross_entropy(g, logits, labels));
  }
  check_against_reference(device_id, g, inputs, tol);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, CrossEntropyOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids()), testing::ValuesIn(loss_cases()), testing::Bool()),
                         [](const testing::TestParamInfo<LossParam>& p) {
                           return fmt::format("{}_{}_{}", test_name_of(std::get<0>(p.param)),
                                              std::get<2>(p.param) ? "grad" : "loss", std::get<1>(p.param).name);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CrossEntropyOnDevice);

// A label outside [0, C) has no defined loss; the kernel must say so with NaN rather than read another row.
class CrossEntropyBadLabel : public testing::TestWithParam<std::string> {};

TEST_P(CrossEntropyBadLabel, GivesNaN) {
  graph::Graph g;
  auto logits = g.input("logits", graph::DType::F32, {3, 4});
  auto labels = g.input("labels", graph::DType::I32, {3});
  g.output("loss", cross_entropy(g, logits, labels));
  for (double bad : {4.0, -1.0}) {
    std::map<std::string, graph::Tensor> inputs{{"logits", random_tensor(graph::DType::F32, {3, 4}, 43)},
                                                {"labels", graph::Tensor::from(graph::DType::I32, {3}, {0, bad, 2})}};
    uint64_t before = validation_messages();
    auto got = run_on_device(device(GetParam()), g, inputs);
    EXPECT_TRUE(std::isnan(got.at("loss")[0])) << "label " << bad << " gave loss " << got.at("loss")[0];
    EXPECT_EQ(validation_messages(), before);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, CrossEntropyBadLabel, testing::ValuesIn(device_ids()),
                         [](const testing::TestParamInfo<std::string>& p) { return test_name_of(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CrossEntropyBadLabel);

}  // namespace
}  // namespace softmax_test
