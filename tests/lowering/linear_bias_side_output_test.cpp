// A linear layer's bias gradient stored by its weight gradient's launch (lowering/fuse.h's bias sums, matmul_kernel.h's
// row_sums): where the plan takes it and where not, LeNet's three fully connected layers, and every candidate config
// of the product with its row sums (split and unsplit, staged element by element and 4 at a time) against the float64
// evaluator on every device present.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "autograd/grad.h"
#include "frontend/lenet.h"
#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "lowering/fuse.h"
#include "lowering/plan.h"
#include "passes/canonical.h"
#include "lowering/tunable.h"
#include "lowering/tunable_ops.h"
#include "tests/lowering/device_list.h"
#include "tests/lowering/forced_config.h"
#include "tests/lowering/plan_queries.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/on_device.h"
#include "tests/support/random_tensor.h"
#include "tests/support/sweep_sample.h"

namespace linear_bias_side_output_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Tensor;
using graph::Value;
using lowering::testing_support::count_prefix;
using lowering::testing_support::kernels_of;
using lowering::testing_support::node_launched;

namespace {

struct Linear {
  int64_t batch = 37, in = 5, out = 7;
};

// loss = sum(relu(linear(x, w, b)) * gy): the weight and bias gradients as autograd writes them (grad_w = g^T x and
// grad_b = sum_to(g, [out]) of the masked gradient g, which both read).
Graph linear_gradients(const Linear& l) {
  Graph g;
  Value x = g.input("x", DType::F32, {l.batch, l.in});
  Value w = g.input("w", DType::F32, {l.out, l.in});
  Value b = g.input("b", DType::F32, {l.out});
  Value gy = g.input("gy", DType::F32, {l.batch, l.out});
  Value loss = g.sum(g.mul(g.relu(g.linear(x, w, b)), gy));
  const std::vector<Value> grads = autograd::grad(g, loss, {w, b});
  g.output("grad_w", grads[0]);
  g.output("grad_b", grads[1]);
  return g;
}

// The same gradients written by hand, the bias gradient read before the weight gradient: the sum keeps its launch.
Graph bias_read_before_the_product() {
  Graph g;
  Value x = g.input("x", DType::F32, {37, 5});
  Value gy = g.input("gy", DType::F32, {37, 7});
  Value grad_b = g.sum_to(gy, {7});
  g.output("grad_b_twice", g.mul(grad_b, 2.0));
  g.output("grad_w", g.matmul(g.transpose(gy), x));
  return g;
}

struct Planned {
  Graph g;
  lowering::Fusion f;
  Value product;  // the weight gradient: the last matmul
};

Planned plan_of(const Graph& original) {
  auto [g, f] = lowering::testing_support::fusion_of(original);
  const Value product = lowering::testing_support::last_node_of(g, OpKind::Matmul);
  return {std::move(g), std::move(f), product};
}

TEST(LinearBiasSideOutputPlan, TheWeightGradientSumsTheBiasGradient) {
  const Graph g = linear_gradients({});
  const Planned p = plan_of(g);
  ASSERT_TRUE(p.product.valid());
  const Value bias{p.f.side_bias[size_t(p.product.id)]};
  ASSERT_TRUE(bias.valid());
  EXPECT_EQ(p.g.node(bias).op, OpKind::SumTo);
  EXPECT_TRUE(p.f.is_side_output[size_t(bias.id)]);
  const lowering::Plan plan = lowering::lower(g, testing_support::h100_like_target());
  EXPECT_FALSE(node_launched(plan, p.g.node(bias).name));
  const std::vector<std::string> kernels = kernels_of(plan);
  EXPECT_EQ(count_prefix(kernels, "sum_to"), 0);
  EXPECT_EQ(count_prefix(kernels, "matmul_m7_k37_n5_at_"), 1);
  EXPECT_NE(kernels.back().find("_rowsums"), std::string::npos) << kernels.back();
}

TEST(LinearBiasSideOutputPlan, NotTakenWhereTheSumIsReadBeforeTheProduct) {
  const Graph g = bias_read_before_the_product();
  const Planned p = plan_of(g);
  ASSERT_TRUE(p.product.valid());
  EXPECT_EQ(p.f.side_bias[size_t(p.product.id)], -1);
  const std::vector<std::string> kernels = kernels_of(lowering::lower(g, testing_support::h100_like_target()));
  EXPECT_EQ(count_prefix(kernels, "sum_to"), 1);
}

// LeNet's step at batch 8192: each fully connected layer's weight gradient (split over the batch) adds its bias's
// partial sums after its products', and the second launch writes both; no sum_to is left, 24 launches.
TEST(LinearBiasSideOutputPlan, LeNetsFullyConnectedLayersSumTheirBiasGradients) {
  nn::LeNetGraphOptions o;
  o.batch = 8192;
  const lowering::Plan plan = lowering::lower(nn::build_lenet_graph(o), testing_support::h100_like_target());
  const std::vector<std::string> kernels = kernels_of(plan);
  EXPECT_EQ(count_prefix(kernels, "sum_to"), 0);
  int products = 0, sums = 0;
  for (const std::string& k : kernels) {
    products += k.rfind("matmul_m", 0) == 0 && k.find("_k8192_") != std::string::npos && k.ends_with("_rowsums");
    sums += k.rfind("matmul_sum_m", 0) == 0 && k.ends_with("_rowsums");
  }
  EXPECT_EQ(products, 3);
  EXPECT_EQ(sums, 3);
  EXPECT_EQ(plan.launches.size(), 24u);
}

class LinearBiasSideOutput : public testing_support::OnDevice {};

// Whole-number inputs: every sum is exact in f32, so any lost, doubled or misplaced term shows.
std::map<std::string, Tensor> inputs(const Linear& l, uint32_t seed) {
  return {{"x", testing_support::integer_tensor({l.batch, l.in}, seed, -2, 2)},
          {"w", testing_support::integer_tensor({l.out, l.in}, seed + 1, -1, 1)},
          {"b", testing_support::integer_tensor({l.out}, seed + 2, -2, 1)},
          {"gy", testing_support::integer_tensor({l.batch, l.out}, seed + 3, -2, 2)}};
}

// Every candidate config against the float64 evaluator: a short batch (unsplit), and batches of 2100 (split; not a
// whole number of slices, so splits end part-way) with 10 outputs (A staged element by element) and 40 outputs (4 at
// a time), 20 inputs (partial block columns). Four candidates of each shape in the test command (on the mock CUDA
// driver's interpreter eight took 26 s), all of them under `ctest -L full`.
TEST_P(LinearBiasSideOutput, EveryConfigMatchesTheReference) {
  const lowering::heavy::Limits limits = lowering::limits_of(dev_->info());
  int split = 0, unsplit = 0;
  for (const Linear& l : {Linear{}, Linear{.batch = 2100, .in = 20, .out = 10}, Linear{.batch = 2100, .in = 20, .out = 40}}) {
    const Graph g = linear_gradients(l);
    const Planned p = plan_of(g);
    const Value bias{p.f.side_bias[size_t(p.product.id)]};
    ASSERT_TRUE(bias.valid());
    const lowering::TunableOp op = lowering::tunable_matmul(p.g, p.product, limits, bias);
    EXPECT_NE(op.key.shape.find("_rowsums"), std::string::npos) << op.key.shape;
    const std::map<std::string, Tensor> in = inputs(l, 5);
    const auto want = graph::evaluate(g, in, DType::F64);
    for (const lowering::heavy::Config& config : testing_support::sampled(op.candidates, 4)) {
      (config.has("splits") ? split : unsplit)++;
      auto exe = lowering::testing_support::compile_forced(g, *dev_, op.key, config, in);
      ASSERT_EQ(exe->plan_text().find("sum_to_f32"), std::string::npos) << config.text();  // no sum_to kernel
      exe->step();
      for (const char* name : {"grad_w", "grad_b"}) {
        const Tensor got = exe->get(name);
        const Tensor& ref = want.at(name);
        ASSERT_EQ(got.data.size(), ref.data.size()) << name;
        for (size_t i = 0; i < ref.data.size(); ++i)
          ASSERT_EQ(got.data[i], ref.data[i]) << name << " element " << i << ", batch " << l.batch << ", " << l.out
                                              << " outputs, config " << config.text();
      }
    }
  }
  EXPECT_GT(split, 0) << "no split candidate was checked";
  EXPECT_GT(unsplit, 0) << "no unsplit candidate was checked";
}

INSTANTIATE_TEST_SUITE_P(AllDevices, LinearBiasSideOutput, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LinearBiasSideOutput);

}  // namespace
}  // namespace linear_bias_side_output_test
