// Seed 002's rewrite: x * sigmoid(x) becomes silu(x), in either operand order. The graph text before and
// after (written by hand), the verifier, and the seed's golden-model check: forward values and gradients of
// the rewritten graph equal the original's, on the float64 evaluator and on every device present.
#include <gtest/gtest.h>

#include "ir/graph/evaluator.h"
#include "ir/graph/text_form.h"
#include "ir/graph/verify.h"
#include "lowering/executable.h"
#include "passes/builtin.h"
#include "passes/pipeline.h"
#include "runtime/device.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/lowering/device_list.h"
#include "tests/passes/values.h"

namespace spire::passes {
namespace silu_test {  // named, not anonymous: test executables build as unity batches

using graph::DType;
using graph::Graph;
using graph::Value;

// The seed's model(x) = sigmoid(x) * x + x.cos(), with a layer in front so there is a weight gradient, and
// both operand orders: a = h * sigmoid(h), b = sigmoid(a) * a.
Graph model() {
  Graph g;
  Value x = g.input("x", DType::F32, {4, 8});
  Value w = g.parameter("w", DType::F32, {8, 8});
  Value h = g.name(g.matmul(x, w), "h");
  Value a = g.name(g.mul(h, g.sigmoid(h)), "a");
  Value b = g.name(g.mul(g.sigmoid(a), a), "b");
  Value y = g.name(g.add(b, g.tanh(x)), "y");
  g.output("y", y);
  g.output("loss", g.sum(y));
  return g;
}

const char* const kBefore =
    "x = input() : f32[4,8]\n"
    "w = parameter() : f32[8,8]\n"
    "h = matmul(x, w) : f32[4,8]\n"
    "sigmoid_1 = sigmoid(h) : f32[4,8]\n"
    "a = mul(h, sigmoid_1) : f32[4,8]\n"
    "sigmoid_3 = sigmoid(a) : f32[4,8]\n"
    "b = mul(sigmoid_3, a) : f32[4,8]\n"
    "tanh_5 = tanh(x) : f32[4,8]\n"
    "y = add(b, tanh_5) : f32[4,8]\n"
    "sum_7 = sum(y) {axes=[0,1], keepdim=false} : f32[]\n"
    "output y = y\n"
    "output loss = sum_7\n";

// Each product is one silu under the product's name; the sigmoids, read by nothing else, are gone.
const char* const kAfter =
    "x = input() : f32[4,8]\n"
    "w = parameter() : f32[8,8]\n"
    "h = matmul(x, w) : f32[4,8]\n"
    "a = silu(h) : f32[4,8]\n"
    "b = silu(a) : f32[4,8]\n"
    "tanh_5 = tanh(x) : f32[4,8]\n"
    "y = add(b, tanh_5) : f32[4,8]\n"
    "sum_7 = sum(y) {axes=[0,1], keepdim=false} : f32[]\n"
    "output y = y\n"
    "output loss = sum_7\n";

PassPipeline silu_pipeline(PassPoint point) {
  PassPipeline p;
  p.verify = true;
  p.add(point, builtin_pass("silu"));
  return p;
}

TEST(SiluRewrite, GraphTextBeforeAndAfter) {
  const Graph g = model();
  ASSERT_EQ(graph::print(g), kBefore);
  const RewriteResult r = apply_rules(g, {silu_rule()});
  EXPECT_EQ(graph::print(r.graph), kAfter);
  EXPECT_EQ(r.rewrites, std::vector<int>{2});
  EXPECT_EQ(r.sweeps, 1);
  EXPECT_EQ(graph::verify(r.graph), "");
  // Through the pipeline (verifier on) it is the same graph, and the text reads back.
  EXPECT_EQ(graph::print(silu_pipeline(PassPoint::AfterImport).run(PassPoint::AfterImport, g)), kAfter);
  EXPECT_EQ(graph::print(graph::parse(kAfter)), kAfter);
}

TEST(SiluRewrite, ASigmoidReadElsewhereStays) {
  Graph g;
  Value x = g.input("x", DType::F64, {3});
  Value s = g.name(g.sigmoid(x), "s");
  g.output("y", g.name(g.mul(s, x), "y"));
  g.output("s", s);
  const RewriteResult r = apply_rules(g, {silu_rule()});
  EXPECT_EQ(graph::print(r.graph),
            "x = input() : f64[3]\n"
            "s = sigmoid(x) : f64[3]\n"
            "y = silu(x) : f64[3]\n"
            "output y = y\n"
            "output s = s\n");
}

TEST(SiluRewrite, OtherProductsAreLeftAlone) {
  Graph g;
  Value x = g.input("x", DType::F32, {3});
  Value z = g.input("z", DType::F32, {3});
  g.output("p", g.mul(z, g.sigmoid(x)));    // another value than sigmoid's input
  g.output("q", g.mul(x, g.tanh(x)));       // not a sigmoid
  g.output("r", g.add(x, g.sigmoid(x)));    // not a product
  const RewriteResult r = apply_rules(g, {silu_rule()});
  EXPECT_EQ(r.total(), 0);
  EXPECT_EQ(graph::print(r.graph), graph::print(g));
}

// The seed's test_backend_correctness: forward and backward of the original and the rewritten graph.
struct Joint {
  Graph original;   // model + gradients
  Graph rewritten;  // rewritten model + its own gradients (silu_grad instead of the product rule)
  Graph rewritten_after_autograd;  // original model + gradients, rewritten after autograd
};

Joint joint_graphs() {
  Joint j;
  const Graph g = model();
  j.original = testing::with_gradients(g, "loss");
  j.rewritten = testing::with_gradients(silu_pipeline(PassPoint::AfterImport).run(PassPoint::AfterImport, g), "loss");
  j.rewritten_after_autograd = silu_pipeline(PassPoint::AfterAutograd).run(PassPoint::AfterAutograd, j.original);
  return j;
}

TEST(SiluRewrite, ForwardAndBackwardMatchOnTheReferenceEvaluator) {
  const Joint j = joint_graphs();
  EXPECT_EQ(graph::verify(j.rewritten), "");
  EXPECT_EQ(graph::verify(j.rewritten_after_autograd), "");
  // The rewrite took effect in both: silu in the forward pass, silu_grad in the backward one.
  const std::string text = graph::print(j.rewritten);
  EXPECT_EQ(text.find("sigmoid"), std::string::npos) << text;
  EXPECT_NE(text.find("silu_grad("), std::string::npos) << text;
  EXPECT_NE(graph::print(j.rewritten_after_autograd).find("a = silu(h)"), std::string::npos);

  const auto feeds = testing::random_feeds(j.original, 1);
  const auto want = graph::evaluate(j.original, feeds, DType::F64);
  ASSERT_EQ(want.size(), 4u);  // y, loss, grad.x, grad.w
  for (const Graph* g : {&j.rewritten, &j.rewritten_after_autograd}) {
    const auto got = graph::evaluate(*g, feeds, DType::F64);
    for (const auto& [name, t] : want) {
      ASSERT_TRUE(got.contains(name)) << name;
      EXPECT_LE(testing::max_norm_error(got.at(name), t), 1e-12) << name;
    }
  }
}

class SiluOnDevice : public ::testing::TestWithParam<std::string> {};

TEST_P(SiluOnDevice, ForwardAndBackwardMatchTheOriginal) {
  auto dev = rt::open_device(GetParam());
  const uint64_t messages = rt::vulkan::validation_message_count();
  const Joint j = joint_graphs();
  const auto feeds = testing::random_feeds(j.original, 2);
  const auto want = graph::evaluate(j.original, feeds, DType::F64);
  // f32 on a device: a few transcendental ops and an 8-term matmul, each within 1e-5 (the op table's bound).
  const double tolerance = 3e-5;
  for (const Graph* g : {&j.original, &j.rewritten, &j.rewritten_after_autograd}) {
    auto exe = lowering::compile(*g, *dev);
    for (const auto& [name, t] : feeds) exe->set(name, t);
    exe->step();
    for (const auto& [name, t] : want)
      EXPECT_LE(testing::max_norm_error(exe->get(name), t), tolerance)
          << name << " of the " << (g == &j.original ? "original" : "rewritten") << " graph on " << GetParam();
  }
  EXPECT_EQ(rt::vulkan::validation_message_count(), messages) << "the Vulkan validation layer reported messages";
}

INSTANTIATE_TEST_SUITE_P(AllDevices, SiluOnDevice, ::testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SiluOnDevice);

}  // namespace silu_test
}  // namespace spire::passes
