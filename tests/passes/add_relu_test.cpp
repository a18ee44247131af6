// relu(add(a, b)) replaced: the matching and rewriting machinery with a rebuild from built-in ops, and the
// rewrite to one fused custom op (seed_add_relu), forward and backward on the evaluator and every Vulkan device.
#include <gtest/gtest.h>

#include "examples/custom_ops/seed_ops.h"
#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "runtime/device.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "ir/graph/op_table.h"
#include "ir/graph/text_form.h"
#include "ir/graph/verify.h"
#include "passes/interface.h"
#include "tests/passes/add_relu_rewrite.h"
#include "tests/passes/values.h"

namespace spire::passes {
namespace add_relu_test {  // named, not anonymous: test executables build as unity batches

using graph::DType;
using graph::Graph;
using graph::Value;

// y = relu(a + b) with the add read once; z = relu(s) where s is also an output (two uses).
Graph two_layers() {
  Graph g;
  Value a = g.input("a", DType::F32, {2, 3});
  Value b = g.input("b", DType::F32, {3});
  Value y = g.name(g.relu(g.add(a, b)), "y");
  Value s = g.name(g.add(y, b), "s");
  Value z = g.name(g.relu(s), "z");
  g.output("y", y);
  g.output("s", s);
  g.output("z", z);
  return g;
}

// relu(v) == maximum(v, 0): the same value from built-in ops, so the rewrite is checkable today.
Value max_with_zero(Graph& g, const Match& m) {
  const Value sum = g.add(m["a"], m["b"]);
  return g.maximum(sum, g.scalar(0.0, m.root().type.dtype));
}

TEST(AddReluRewrite, RebuiltFromBuiltinOps) {
  const Graph g = two_layers();
  ASSERT_EQ(graph::print(g),
            "a = input() : f32[2,3]\n"
            "b = input() : f32[3]\n"
            "add_0 = add(a, b) : f32[2,3]\n"
            "y = relu(add_0) : f32[2,3]\n"
            "s = add(y, b) : f32[2,3]\n"
            "z = relu(s) : f32[2,3]\n"
            "output y = y\n"
            "output s = s\n"
            "output z = z\n");
  const RewriteResult r = apply_rules(g, {testing::add_relu_rule(max_with_zero)});
  // The replacement takes the root's name, what else it built is named <root>.<op>, the old add is dead and
  // gone; relu(s) stays because s has a second use (an output).
  EXPECT_EQ(graph::print(r.graph),
            "a = input() : f32[2,3]\n"
            "b = input() : f32[3]\n"
            "y.add = add(a, b) : f32[2,3]\n"
            "y.constant = constant() {value=0.0} : f32[]\n"
            "y = maximum(y.add, y.constant) : f32[2,3]\n"
            "s = add(y, b) : f32[2,3]\n"
            "z = relu(s) : f32[2,3]\n"
            "output y = y\n"
            "output s = s\n"
            "output z = z\n");
  EXPECT_EQ(r.rewrites, std::vector<int>{1});
  EXPECT_EQ(graph::verify(r.graph), "");
  EXPECT_EQ(interface_change(g, r.graph), "");

  const auto feeds = testing::random_feeds(g, 3);
  const auto want = graph::evaluate(g, feeds), got = graph::evaluate(r.graph, feeds);
  for (const auto& [name, t] : want) EXPECT_EQ(got.at(name).data, t.data) << name;
}

// The example proper (seed 002 with seed 004's fused kernel): the pair becomes ONE user op,
// seed_add_relu (examples/custom_ops/add_relu.op, a GLSL kernel), and the rewritten graph computes the same values
// and, through the op's own gradient, the same gradients.
Graph rewritten_to_custom_op(const Graph& g) {
  examples::register_example_op_files();
  const RewriteResult r = testing::rewrite_add_relu(g, "seed_add_relu");
  EXPECT_EQ(r.rewrites, std::vector<int>{1});
  EXPECT_EQ(graph::verify(r.graph), "");
  return r.graph;
}

TEST(AddReluRewrite, ToOneFusedCustomOp) {
  const Graph g = two_layers();
  const Graph r = rewritten_to_custom_op(g);
  EXPECT_EQ(graph::op_name(r.node(r.at("y")).op), "seed_add_relu");
  EXPECT_FALSE(r.find("add_0").has_value());
  EXPECT_TRUE(r.find("y.broadcast_to").has_value());  // b [3] broadcast to [2,3] for the op's kernel
  const auto feeds = testing::random_feeds(g, 4);
  const auto want = graph::evaluate(g, feeds), got = graph::evaluate(r, feeds);
  for (const auto& [name, t] : want) EXPECT_LE(testing::max_norm_error(got.at(name), t), 1e-12) << name;
}

// Forward and backward: loss = sum(z * w) over the original and the rewritten graph, differentiated with respect
// to a and b, on the float64 evaluator and on every Vulkan device (the op's kernel is GLSL).
TEST(AddReluRewrite, ForwardAndBackwardMatchOnEveryDevice) {
  auto with_loss = [](Graph g) {
    Value w = g.input("w", DType::F32, {2, 3});
    Value loss = g.sum(g.mul(g.at("z"), w));
    g.output("loss", loss);
    return testing::with_gradients(std::move(g), "loss");
  };
  const Graph original = with_loss(two_layers());
  const Graph rewritten = with_loss(rewritten_to_custom_op(two_layers()));
  ASSERT_NE(graph::print(rewritten).find("seed_add_relu("), std::string::npos);
  const auto feeds = testing::random_feeds(original, 5);
  const auto want = graph::evaluate(original, feeds, DType::F64);
  const auto got = graph::evaluate(rewritten, feeds, DType::F64);
  for (const auto& [name, t] : want) EXPECT_LE(testing::max_norm_error(got.at(name), t), 1e-12) << name;
  int devices = 0;
  for (const auto& info : rt::list_devices()) {
    if (info.backend != rt::Backend::Vulkan) continue;
    auto dev = rt::open_device(info.id);
    const uint64_t messages = rt::vulkan::validation_message_count();
    for (const Graph* g : {&original, &rewritten}) {
      auto exe = lowering::compile(*g, *dev);
      for (const auto& [name, t] : feeds) exe->set(name, t);
      exe->step();
      for (const auto& [name, t] : want)
        EXPECT_LE(testing::max_norm_error(exe->get(name), t), 1e-5)
            << name << " of the " << (g == &original ? "original" : "rewritten") << " graph on " << info.id;
    }
    EXPECT_EQ(rt::vulkan::validation_message_count(), messages) << "the Vulkan validation layer reported messages";
    ++devices;
  }
  if (devices == 0) GTEST_SKIP() << "no Vulkan device: the evaluator comparison above ran";
}

}  // namespace add_relu_test
}  // namespace spire::passes
