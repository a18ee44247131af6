// Bias sums as side outputs (lowering/fuse.h): a convolution's weight gradient gathered from the pooling's positions
// also sums its grad_out per output channel where the graph has that sum (the layer's bias gradient), so the sum gets
// no launch and the masked pooled gradient is read once; where the pooling gradient is stored instead (read by the
// input gradient too), its launch sums what it reads per chunk of images and a second launch adds the chunks. Checked:
// where the plan takes each and where not, LeNet's step at batch 8192 on an H100-like target, and the gradients of
// every candidate config of the weight gradient, and of the pooling gradient's form, against the float64 evaluator on
// every device present (the staged configs sum in their staging rounds, a last partial round included; the others sum
// the pooled gradient in a launch of its own, pooled_channel_sums_kernel).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

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

namespace bias_side_output_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Tensor;
using graph::Value;

namespace {


struct Layer {
  int64_t images = 3, channels = 4, size = 8;
  // x's gradient too: it reads the masked pooling gradient, which is then stored by its own launch, and that launch
  // sums the bias gradient (LeNet's second convolution).
  bool input_gradient = false;
};

// p = max_pool2d(relu(conv2d(x, w) + b)), loss = sum(p * gp): the weight and bias gradients as autograd writes them.
Graph conv_layer_gradients(const Layer& l) {
  Graph g;
  const graph::Conv2dOptions conv{.padding = {1, 1}};
  Value x = g.input("x", DType::F32, {l.images, 2, l.size, l.size});
  Value w = g.input("w", DType::F32, {l.channels, 2, 3, 3});
  Value b = g.input("b", DType::F32, {l.channels});
  Value gp = g.input("gp", DType::F32, {l.images, l.channels, l.size / 2, l.size / 2});
  Value y = g.relu(g.add(g.conv2d(x, w, conv), g.reshape(b, {1, l.channels, 1, 1})));
  Value p = g.max_pool2d(y, {{2, 2}, {2, 2}, {0, 0}});
  Value loss = g.sum(g.mul(p, gp));
  const std::vector<Value> grads = autograd::grad(g, loss, l.input_gradient ? std::vector<Value>{w, b, x} : std::vector<Value>{w, b});
  g.output("grad_w", grads[0]);
  g.output("grad_b", grads[1]);
  if (l.input_gradient) g.output("grad_x", grads[2]);
  return g;
}

// The same gradients written by hand, with a reader of the bias gradient between it and the weight gradient: the
// sum must then be launched where it stands.
Graph bias_read_before_the_weight_gradient() {
  Graph g;
  const graph::Conv2dOptions conv{.padding = {1, 1}};
  Value x = g.input("x", DType::F32, {3, 2, 8, 8});
  Value w = g.input("w", DType::F32, {4, 2, 3, 3});
  Value gp = g.input("gp", DType::F32, {3, 4, 4, 4});
  Value y = g.relu(g.conv2d(x, w, conv));
  const graph::Pool2dOptions pool{{2, 2}, {2, 2}, {0, 0}};
  g.output("p", g.max_pool2d(y, pool));
  Value masked = g.relu_grad(g.max_pool2d_grad(gp, y, pool), y);
  Value grad_b = g.sum_to(masked, {1, 4, 1, 1});
  g.output("grad_b_twice", g.mul(grad_b, 2.0));
  g.output("grad_w", g.conv2d_grad_weight(masked, x, conv, {4, 2, 3, 3}));
  return g;
}

struct Planned {
  Graph g;
  lowering::Fusion f;
  Value conv;       // the weight gradient
  Value pool_grad;  // the pooling's gradient from positions
};

Planned plan_of(const Graph& original) {
  auto [g, f] = lowering::testing_support::fusion_of(original);
  const Value conv = lowering::testing_support::last_node_of(g, OpKind::Conv2dGradWeight);
  const Value pool_grad = lowering::testing_support::last_node_of(g, OpKind::MaxPool2dGradArgmax);
  return {std::move(g), std::move(f), conv, pool_grad};
}

using lowering::testing_support::count_prefix;
using lowering::testing_support::kernels_of;
using lowering::testing_support::node_launched;

TEST(BiasSideOutputPlan, TheWeightGradientSumsTheBiasGradient) {
  const Graph g = conv_layer_gradients({});
  const Planned p = plan_of(g);
  ASSERT_TRUE(p.conv.valid());
  ASSERT_GE(p.f.prologue[size_t(p.conv.id)], 0) << "the weight gradient does not gather its pooling gradient";
  const Value bias{p.f.side_bias[size_t(p.conv.id)]};
  ASSERT_TRUE(bias.valid());
  EXPECT_EQ(p.g.node(bias).op, OpKind::SumTo);
  EXPECT_TRUE(p.f.is_side_output[size_t(bias.id)]);
  EXPECT_EQ(p.f.side_outputs(p.conv).bias, bias);
  const lowering::Plan plan = lowering::lower(g, testing_support::h100_like_target());
  EXPECT_FALSE(node_launched(plan, p.g.node(bias).name));
  const std::vector<std::string> kernels = kernels_of(plan);
  EXPECT_EQ(count_prefix(kernels, "sum_to"),
            0);
}

TEST(BiasSideOutputPlan, NotTakenWhereTheSumIsReadBeforeTheWeightGradient) {
  const Graph g = bias_read_before_the_weight_gradient();
  const Planned p = plan_of(g);
  ASSERT_TRUE(p.conv.valid());
  ASSERT_GE(p.f.prologue[size_t(p.conv.id)], 0) << "the weight gradient does not gather its pooling gradient";
  EXPECT_EQ(p.f.side_bias[size_t(p.conv.id)], -1);
  const lowering::Plan plan = lowering::lower(g, testing_support::h100_like_target());
  const std::vector<std::string> kernels = kernels_of(plan);
  EXPECT_EQ(count_prefix(kernels, "sum_to"),
            1);
}

TEST(BiasSideOutputPlan, ThePoolingGradientSumsItWhereItIsStored) {
  const Graph g = conv_layer_gradients({.input_gradient = true});
  const Planned p = plan_of(g);
  ASSERT_TRUE(p.conv.valid() && p.pool_grad.valid());
  EXPECT_EQ(p.f.prologue[size_t(p.conv.id)], -1) << "the pooling gradient has two readers: it is stored";
  EXPECT_EQ(p.f.side_bias[size_t(p.conv.id)], -1);
  const Value bias{p.f.side_bias[size_t(p.pool_grad.id)]};
  ASSERT_TRUE(bias.valid());
  EXPECT_TRUE(p.f.is_side_output[size_t(bias.id)]);
  const lowering::Plan plan = lowering::lower(g, testing_support::h100_like_target());
  EXPECT_FALSE(node_launched(plan, p.g.node(bias).name));
  const std::vector<std::string> kernels = kernels_of(plan);
  EXPECT_EQ(count_prefix(kernels, "sum_to"),
            0);
  EXPECT_EQ(count_prefix(kernels, "max_pool2d_grad_argmax_sums_"),
            1);
}

// LeNet's step at batch 8192: the first convolution's weight gradient (staged, 512 splits through PTX) adds its bias's
// partial sums beside its weights', and its second launch writes both; conv1's bias sum (a sum_to over the pooled
// gradient, two launches before) is gone; the second's is summed by its pooling gradient's launch (stored for its weight
// and input gradients) per chunk of images, and one launch adds the chunks.
TEST(BiasSideOutputPlan, LeNetsConvolutionsSumTheirBiasGradients) {
  nn::LeNetGraphOptions o;
  o.batch = 8192;
  const lowering::Plan plan = lowering::lower(nn::build_lenet_graph(o), testing_support::h100_like_target());
  const std::vector<std::string> kernels = kernels_of(plan);
  int with_bias = 0, bias_sums = 0, sum_tos = 0;
  for (const std::string& k : kernels) {
    with_bias += k.rfind("conv2d_grad_weight_n8192_c1_", 0) == 0 && k.find("_pooled_k2x2_relu_argmax_bias") != std::string::npos;
    bias_sums += k.rfind("conv2d_grad_weight_sum_n8192_c1_", 0) == 0 && k.find("_bias") != std::string::npos;
    sum_tos += k.rfind("sum_to_f32_8192x6x14x14", 0) == 0;
  }
  EXPECT_EQ(with_bias, 1);
  EXPECT_EQ(bias_sums, 1);
  EXPECT_EQ(sum_tos, 0);
  EXPECT_EQ(count_prefix(kernels, "sum_to_f32_8192x16x7x7"),
            0);
  EXPECT_EQ(count_prefix(kernels, "max_pool2d_grad_argmax_n8192_c16_h14_w14_k2x2_s2x2_p0x0_f32_sums"),
            1);
  EXPECT_EQ(count_prefix(kernels, "max_pool2d_grad_argmax_sums_n8192_c16"),
            1);
  EXPECT_EQ(plan.launches.size(), 24u);  // the fully connected layers' bias sums too (linear_bias_side_output_test.cpp)
}

class BiasSideOutput : public testing_support::OnDevice {};

// The layer's inputs: whole-number x, w and b (ties within windows, windows the ReLU zeroes), uniform gp.
std::map<std::string, Tensor> inputs(const Layer& l, uint32_t seed) {
  return {{"x", testing_support::integer_tensor({l.images, 2, l.size, l.size}, seed, 0, 2)},
          {"w", testing_support::integer_tensor({l.channels, 2, 3, 3}, seed + 1, -1, 1)},
          {"b", testing_support::integer_tensor({l.channels}, seed + 2, -2, 1)},
          {"gp", testing_support::uniform_tensor({l.images, l.channels, l.size / 2, l.size / 2}, seed + 3, DType::F32)}};
}

// The executable's outputs `names` against the float64 evaluator's, to f32 rounding.
testing::AssertionResult matches(lowering::Executable& exe, const std::map<std::string, Tensor>& want,
                                 std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const Tensor got = exe.get(name);
    const Tensor& ref = want.at(name);
    if (got.data.size() != ref.data.size())
      return testing::AssertionFailure() << name << ": " << got.data.size() << " elements, want " << ref.data.size();
    for (size_t i = 0; i < ref.data.size(); ++i)
      if (!(std::abs(got.data[i] - ref.data[i]) <= 1e-5 * (1 + std::abs(ref.data[i]))))
        return testing::AssertionFailure() << name << " element " << i << ": " << got.data[i] << ", want " << ref.data[i];
  }
  return testing::AssertionSuccess();
}

// Every candidate config of the weight gradient with its bias sum against the float64 evaluator: 3 images of 4
// channels (48 windows an image, so that most workgroup sizes end in a partial staging round), and 5 images of 6
// channels.
TEST_P(BiasSideOutput, EveryConfigMatchesTheReference) {
  const lowering::heavy::Limits limits = lowering::limits_of(dev_->info());
  int staged = 0, others = 0;
  for (const Layer& l : {Layer{}, Layer{.images = 5, .channels = 6}}) {
    const Graph g = conv_layer_gradients(l);
    const Planned p = plan_of(g);
    const Value bias{p.f.side_bias[size_t(p.conv.id)]};
    ASSERT_TRUE(bias.valid());
    const lowering::TunableOp op = lowering::tunable_conv2d_grad_weight(p.g, p.conv, limits, true, bias);
    EXPECT_NE(op.key.shape.find("_bias"), std::string::npos) << op.key.shape;
    const std::map<std::string, Tensor> in = inputs(l, 11);
    const auto want = graph::evaluate(g, in, DType::F64);
    for (const lowering::heavy::Config& config : op.candidates) {
      (config.has("all_pairs") ? staged : others)++;
      auto exe = lowering::testing_support::compile_forced(g, *dev_, op.key, config, in);
      ASSERT_NE(exe->plan_text().find(config.has("all_pairs") ? "_argmax_bias" : "pooled_channel_sums_"), std::string::npos)
          << config.text();
      exe->step();
      ASSERT_TRUE(matches(*exe, want, {"grad_w", "grad_b"})) << l.channels << " channels, config " << config.text();
    }
  }
  EXPECT_GT(staged, 0) << "no staged (all_pairs) candidate was checked";
  EXPECT_GT(others, 0) << "no candidate that runs the pooling gradient first was checked";
}

// The pooling gradient's launch summing the bias gradient: 150 images of 4 channels of 4x4 windows (64 images a chunk:
// three chunks, the last partial), against float64, with x's gradient (which reads the stored pooling gradient).
TEST_P(BiasSideOutput, ThePoolingGradientsSumsMatchTheReference) {
  const Layer l{.images = 150, .input_gradient = true};
  const Graph g = conv_layer_gradients(l);
  const std::map<std::string, Tensor> in = inputs(l, 21);
  const auto want = graph::evaluate(g, in, DType::F64);
  auto exe = lowering::compile(g, *dev_);
  ASSERT_NE(exe->plan_text().find("max_pool2d_grad_argmax_sums_"), std::string::npos);
  for (const auto& [name, t] : in) exe->set(name, t);
  exe->step();
  EXPECT_TRUE(matches(*exe, want, {"grad_w", "grad_b", "grad_x"}));
}

INSTANTIATE_TEST_SUITE_P(AllDevices, BiasSideOutput, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BiasSideOutput);

}  // namespace
}  // namespace bias_side_output_test
