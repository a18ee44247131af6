// What autograd::grad builds: ordinary ops with edges to saved forward values, only the gradients needed,
// PyTorch's tie rules, clear errors; and a whole training graph through the text form.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "autograd/grad.h"
#include "autograd/optimizers.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/text_form.h"
#include "ir/graph/training_state.h"
#include "tests/support/named_ops.h"

namespace spire::autograd {
namespace {

using graph::DType;
using graph::Graph;
using graph::GraphError;
using graph::OpKind;
using graph::Tensor;
using graph::Value;

// The first node of `op` appended after `from`.
const graph::Node* find_op(const Graph& g, OpKind op, int32_t from = 0) {
  for (int32_t i = from; i < g.size(); ++i)
    if (g.node(i).op == op) return &g.node(i);
  return nullptr;
}

TEST(GradStructure, SavedActivationsAreOrdinaryEdges) {
  Graph g;
  Value x = g.input("x", DType::F32, {2, 1, 8, 8});
  Value w = g.parameter("w", DType::F32, {3, 1, 3, 3});
  Value conv = g.conv2d(x, w, {.padding = {1, 1}});
  Value act = g.relu(conv);
  Value pooled = g.max_pool2d(act, {.kernel = {2, 2}});
  Value loss = g.mean(pooled);
  int32_t forward_size = g.size();
  auto grads = grad(g, loss, {w});
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(g.type(grads[0]), g.type(w));

  const graph::Node* pool_grad = find_op(g, OpKind::MaxPool2dGrad, forward_size);
  ASSERT_NE(pool_grad, nullptr);
  EXPECT_EQ(pool_grad->inputs[1], act);  // the pool's input, saved from forward
  const graph::Node* relu_grad = find_op(g, OpKind::ReluGrad, forward_size);
  ASSERT_NE(relu_grad, nullptr);
  EXPECT_EQ(relu_grad->inputs[1], act);  // relu's own result
  const graph::Node* wgrad = find_op(g, OpKind::Conv2dGradWeight, forward_size);
  ASSERT_NE(wgrad, nullptr);
  EXPECT_EQ(wgrad->inputs[1], x);
  EXPECT_EQ(g.node(grads[0]).op, OpKind::Conv2dGradWeight);
  // x is an input nobody asked about: no conv2d_grad_input is built.
  EXPECT_EQ(find_op(g, OpKind::Conv2dGradInput, forward_size), nullptr);
}

TEST(GradStructure, UnusedWrtGetsZerosAndBadArgumentsThrow) {
  Graph g;
  Value x = g.input("x", DType::F64, {3});
  Value unused = g.parameter("unused", DType::F64, {2, 2});
  Value loss = g.sum(g.exp(x));
  auto grads = grad(g, loss, {unused});
  EXPECT_EQ(g.node(grads[0]).op, OpKind::Constant);
  EXPECT_EQ(g.type(grads[0]), g.type(unused));
  EXPECT_EQ(g.node(grads[0]).attrs.get_float("value"), 0.0);

  EXPECT_THROW(grad(g, g.exp(x), {x}), GraphError);  // loss not a scalar
  Value labels = g.input("labels", DType::I64, {3});
  EXPECT_THROW(grad(g, loss, {labels}), GraphError);  // not float
}

// Evaluates d loss / d inputs for a loss built by `body` (float64).
std::map<std::string, Tensor> gradients(const std::map<std::string, Tensor>& feed,
                                        const std::function<Value(Graph&)>& body, const std::vector<std::string>& wrt) {
  Graph g;
  for (const auto& [name, t] : feed) g.input(name, t.dtype, t.shape);
  Value loss = body(g);
  std::vector<Value> vals;
  for (const std::string& n : wrt) vals.push_back(g.at(n));
  auto grads = grad(g, loss, vals);
  for (size_t i = 0; i < wrt.size(); ++i) g.output("grad_" + wrt[i], grads[i]);
  return graph::evaluate(g, feed, DType::F64);
}

TEST(GradSemantics, MaximumTieSplitsTheGradientLikePyTorch) {
  std::map<std::string, Tensor> feed = {{"a", Tensor::from(DType::F64, {3}, {1, 2, 3})},
                                        {"b", Tensor::from(DType::F64, {3}, {1, 5, 0})}};
  auto r = gradients(feed, [](Graph& g) { return g.sum(g.maximum(g.at("a"), g.at("b"))); }, {"a", "b"});
  EXPECT_EQ(r["grad_a"].data, (std::vector<double>{0.5, 0, 1}));
  EXPECT_EQ(r["grad_b"].data, (std::vector<double>{0.5, 1, 0}));
  auto m = gradients(feed, [](Graph& g) { return g.sum(g.minimum(g.at("a"), g.at("b"))); }, {"a", "b"});
  EXPECT_EQ(m["grad_a"].data, (std::vector<double>{0.5, 1, 0}));
  EXPECT_EQ(m["grad_b"].data, (std::vector<double>{0.5, 0, 1}));
}

TEST(GradSemantics, AmaxSharesTheGradientAmongTies) {
  std::map<std::string, Tensor> feed = {{"x", Tensor::from(DType::F64, {2, 3}, {4, 1, 4, 0, 2, 1})}};
  auto r = gradients(feed, [](Graph& g) { return g.sum(g.max(g.at("x"), {1})); }, {"x"});
  EXPECT_EQ(r["grad_x"].data, (std::vector<double>{0.5, 0, 0.5, 0, 1, 0}));
}

TEST(GradSemantics, MaxPoolGradientGoesToTheFirstMaximumOfEachWindow) {
  // One 2x4 image, 2x2 windows: ties in both windows; the first in row-major window order wins.
  std::map<std::string, Tensor> feed = {
      {"x", Tensor::from(DType::F64, {1, 1, 2, 4}, {3, 3, 1, 7,
                                                     3, 0, 7, 7})}};
  auto r = gradients(feed, [](Graph& g) { return g.sum(g.max_pool2d(g.at("x"), {.kernel = {2, 2}})); }, {"x"});
  EXPECT_EQ(r["grad_x"].data, (std::vector<double>{1, 0, 0, 1,
                                                   0, 0, 0, 0}));
}

TEST(GradSemantics, ReluGradientIsZeroAtZero) {
  std::map<std::string, Tensor> feed = {{"x", Tensor::from(DType::F64, {4}, {-1, 0, 0.5, 2})}};
  auto r = gradients(feed, [](Graph& g) { return g.sum(g.relu(g.at("x"))); }, {"x"});
  EXPECT_EQ(r["grad_x"].data, (std::vector<double>{0, 0, 1, 1}));
}

TEST(GradSemantics, GradientsOfAValueUsedTwiceAccumulate) {
  std::map<std::string, Tensor> feed = {{"x", Tensor::from(DType::F64, {3}, {1, -2, 0.5})}};
  // d/dx (x*x + exp(x)) = 2x + exp(x)
  auto r = gradients(feed, [](Graph& g) { Value x = g.at("x"); return g.sum(g.add(g.mul(x, x), g.exp(x))); }, {"x"});
  for (int i = 0; i < 3; ++i) {
    double xv = feed["x"][i];
    EXPECT_NEAR(r["grad_x"][i], 2 * xv + std::exp(xv), 1e-15);
  }
}

// A full training step (forward, backward, SGD) printed, parsed back and run: same text, same numbers.
TEST(TrainingGraph, RoundTripsThroughTheTextFormAndRunsTheSame) {
  Graph g;
  Value x = g.input("x", DType::F64, {2, 1, 6, 6});
  Value labels = g.input("labels", DType::I64, {2});
  Value w = g.parameter("conv.weight", DType::F64, {2, 1, 3, 3});
  Value fc = g.parameter("fc.weight", DType::F64, {3, 8});
  Value h = g.max_pool2d(g.relu(g.conv2d(x, w, {.padding = {1, 1}})), {.kernel = {3, 3}});
  Value loss = g.name(cross_entropy(g, g.linear(g.flatten(h), fc), labels), "loss");
  g.output("loss", loss);
  auto grads = grad(g, loss, g.parameters());
  for (size_t i = 0; i < grads.size(); ++i) g.output("grad." + g.node(g.parameters()[i]).name, grads[i]);
  sgd_step(g, g.parameters(), grads, {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-2});

  std::string text = graph::print(g);
  Graph back = graph::parse(text);
  EXPECT_EQ(graph::print(back), text);

  std::map<std::string, Tensor> feed = graph::initial_states(g);
  feed["x"] = Tensor::from(DType::F64, {2, 1, 6, 6}, std::vector<double>(72, 0.0));
  for (int i = 0; i < 72; ++i) feed["x"][i] = std::sin(0.7 * i);
  feed["labels"] = Tensor::from(DType::I64, {2}, {2, 0});
  feed["conv.weight"] = Tensor(DType::F64, {2, 1, 3, 3});
  for (int i = 0; i < 18; ++i) feed["conv.weight"][i] = std::cos(1.3 * i) * 0.5;
  feed["fc.weight"] = Tensor(DType::F64, {3, 8});
  for (int i = 0; i < 24; ++i) feed["fc.weight"][i] = std::sin(0.9 * i + 1) * 0.3;
  auto a = graph::evaluate(g, feed, DType::F64);
  auto b = graph::evaluate(back, feed, DType::F64);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_EQ(t.data, b.at(name).data) << name;
  EXPECT_TRUE(a.contains("conv.weight"));            // updated parameter
  EXPECT_TRUE(a.contains("momentum.fc.weight"));     // updated momentum buffer
  EXPECT_GT(a.at("loss")[0], 0.0);
}

}  // namespace
}  // namespace spire::autograd
