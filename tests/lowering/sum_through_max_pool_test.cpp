// sum_through_max_pool (passes/sum_through_max_pool.h) and the reductions' prologues (lowering/fuse.h): a bias
// gradient summed through a max pooling's gradient adds the pooled gradient masked at the pooled maxima instead, the
// float64 evaluator gives the same sums (the same nonzero terms in another order), the rewrite leaves alone what
// the identity does not cover, and in LeNet's step the masks are computed in the sums' loads.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/lenet.h"
#include "ir/graph/evaluator.h"
#include "lowering/fuse.h"
#include "lowering/plan.h"
#include "passes/canonical.h"
#include "lowering/schedule.h"
#include "passes/sum_through_max_pool.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/random_tensor.h"

namespace sum_through_max_pool_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Graph;
using graph::OpKind;

namespace {

using testing_support::uniform_tensor;

void expect_close_results(const Graph& a, const Graph& b, const std::map<std::string, graph::Tensor>& in) {
  const auto ra = graph::evaluate(a, in, DType::F64), rb = graph::evaluate(b, in, DType::F64);
  ASSERT_EQ(ra.size(), rb.size());
  for (const auto& [name, t] : ra) {
    ASSERT_EQ(rb.at(name).shape, t.shape) << name;
    for (size_t i = 0; i < t.data.size(); ++i)
      EXPECT_NEAR(rb.at(name).data[i], t.data[i], 1e-12 * (1 + std::abs(t.data[i]))) << name << " " << i;
  }
}

// The input of the sum g outputs as `output`.
const graph::Node& summed(const Graph& g, const std::string& output) {
  for (const auto& o : g.outputs())
    if (o.name == output) return g.node(g.node(o.value).inputs[0]);
  throw std::runtime_error("no output " + output);
}

// y = relu(x) pooled 2x2 (stride 2, or 3x3 stride 2 with padding 1: overlapping windows); the gradient g of the
// pooled tensor scattered back, masked by the ReLU, summed over the batch and space (bias) and, separately, over
// the batch only (not covered: space is kept), without the mask, and with a mask of another tensor.
Graph pooled_layer(const graph::Pool2dOptions& pool, const graph::Shape& pooled) {
  Graph g;
  auto x = g.input("x", DType::F64, {3, 4, 8, 8});
  auto y = g.relu(x);
  auto p = g.max_pool2d(y, pool);
  g.output("p", p);
  auto gp = g.input("g", DType::F64, pooled);
  auto scattered = g.max_pool2d_grad(gp, y, pool);
  auto masked = g.relu_grad(scattered, y);
  g.output("bias", g.sum_to(masked, {1, 4, 1, 1}));
  g.output("per_position", g.sum_to(masked, {1, 4, 8, 8}));
  g.output("unmasked", g.sum_to(g.max_pool2d_grad(gp, y, pool), {4, 1, 1}));
  g.output("other_mask", g.sum_to(g.relu_grad(g.max_pool2d_grad(gp, y, pool), x), {1, 4, 1, 1}));
  return g;
}

TEST(SumThroughMaxPool, SumsThePooledGradientMaskedAtTheMaxima) {
  for (const auto& [pool, pooled] : {std::pair{graph::Pool2dOptions{{2, 2}, {2, 2}, {0, 0}}, graph::Shape{3, 4, 4, 4}},
                                     std::pair{graph::Pool2dOptions{{3, 3}, {2, 2}, {1, 1}}, graph::Shape{3, 4, 4, 4}}}) {
    const Graph g = pooled_layer(pool, pooled);
    const Graph r = passes::sum_through_max_pool(g);
    const graph::Node& bias = summed(r, "bias");
    ASSERT_EQ(bias.op, OpKind::ReluGrad);
    EXPECT_EQ(r.node(bias.inputs[0]).op, OpKind::Input);      // g itself
    EXPECT_EQ(r.node(bias.inputs[1]).op, OpKind::MaxPool2d);  // the forward pass's pooled tensor
    EXPECT_EQ(summed(r, "unmasked").op, OpKind::Input);       // without the mask: g
    EXPECT_EQ(summed(r, "per_position").op, OpKind::ReluGrad);    // space kept: as it was
    EXPECT_EQ(r.node(summed(r, "per_position").inputs[0]).op, OpKind::MaxPool2dGrad);
    EXPECT_EQ(r.node(summed(r, "other_mask").inputs[0]).op, OpKind::MaxPool2dGrad);  // the mask of another tensor
    // x's signs mix, so the ReLU masks some maxima.
    expect_close_results(g, r, {{"x", uniform_tensor({3, 4, 8, 8}, 1)}, {"g", uniform_tensor(pooled, 2)}});
  }
}

TEST(SumThroughMaxPool, NeedsTheForwardPoolAndFewerElements) {
  Graph g;
  auto x = g.input("x", DType::F64, {2, 3, 6, 6});
  auto gp = g.input("g", DType::F64, {2, 3, 3, 3});
  const graph::Pool2dOptions pool{{2, 2}, {2, 2}, {0, 0}};
  auto masked = g.relu_grad(g.max_pool2d_grad(gp, x, pool), x);  // no max_pool2d(x) in the graph
  g.output("bias", g.sum_to(masked, {1, 3, 1, 1}));
  const Graph r = passes::sum_through_max_pool(g);
  EXPECT_EQ(summed(r, "bias").op, OpKind::ReluGrad);
  EXPECT_EQ(r.node(summed(r, "bias").inputs[0]).op, OpKind::MaxPool2dGrad);
}

// In LeNet's training step both convolutions' bias gradients add the pooled gradients masked at the pooled maxima,
// computed where they are summed (the masks and the sums get no launch of their own, nothing is stored), and the step's
// loss and gradients are those of the original graph.
TEST(SumThroughMaxPool, LeNetsBiasGradientsSumThePooledGradients) {
  nn::LeNetGraphOptions o;
  o.batch = 16;
  const Graph g = nn::build_lenet_graph(o);
  const Graph c = passes::canonicalize(g);
  const lowering::Fusion f = lowering::plan_fusion(c);
  int prologues = 0;
  for (graph::Value v : c.values()) {
    if (c.node(v).op != OpKind::SumTo || c.type(c.node(v).inputs[0]).shape.size() != 4) continue;
    const graph::Value in = c.node(v).inputs[0];
    EXPECT_EQ(c.node(in).op, OpKind::ReluGrad) << c.node(v).name;
    EXPECT_EQ(c.node(c.node(in).inputs[1]).op, OpKind::MaxPool2d) << c.node(v).name;
    EXPECT_EQ(f.prologue[size_t(v.id)], in.id) << c.node(v).name;
    EXPECT_TRUE(f.fused[size_t(in.id)]) << c.node(v).name;
    // Both are then summed by the launches that read their pooled gradients (fuse.h's bias sums,
    // bias_side_output_test.cpp): no launch of their own.
    EXPECT_TRUE(f.is_side_output[size_t(v.id)]) << c.node(v).name;
    ++prologues;
  }
  EXPECT_EQ(prologues, 2);
  const lowering::Plan plan = lowering::lower(g, testing_support::h100_like_target());
  for (const auto& k : plan.kernels) EXPECT_FALSE(k.name.rfind("sum_to", 0) == 0 && k.name.find("relu_grad") != std::string::npos) << k.name;
  std::map<std::string, graph::Tensor> in;
  for (const auto& [name, t] : nn::lenet_initial_parameters(1)) in[name] = t;
  in["x"] = uniform_tensor({16, 1, 28, 28}, 5, DType::F32);
  graph::Tensor y(DType::I64, {16}, 0);
  for (size_t i = 0; i < y.data.size(); ++i) y.data[i] = double(i % 10);
  in["y"] = y;
  expect_close_results(g, c, in);
}

}  // namespace
}  // namespace sum_through_max_pool_test
