// nn modules: state_dict names, shapes, graph wiring, PyTorch reprs and default-init bounds.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/nn/init.h"
#include "frontend/nn/layers.h"

namespace spire::nn {
namespace {

using graph::DType;

TEST(NnModules, SequentialNamesChildrenByIndexAndSkipsParameterlessOnes) {
  const Sequential mlp(Linear(3, 4), ReLU(), Linear(4, 2, /*bias=*/false));
  const auto specs = parameters(mlp, "head.");
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].name, "head.0.weight");
  EXPECT_EQ(specs[0].shape, (graph::Shape{4, 3}));
  EXPECT_EQ(specs[1].name, "head.0.bias");
  EXPECT_EQ(specs[2].name, "head.2.weight");
  EXPECT_EQ(specs[2].shape, (graph::Shape{2, 4}));

  // forward() creates graph parameters with the same names, types and order.
  graph::Graph g;
  const graph::Value x = g.input("x", DType::F64, {5, 3});
  const graph::Value y = mlp.forward(Scope(g, DType::F64, "head."), x);
  EXPECT_EQ(g.type(y), (graph::TensorType{DType::F64, {5, 2}}));
  // Each child's result is named after the child, as torch.fx names them.
  EXPECT_EQ(g.node(y).name, "head.2");
  EXPECT_EQ(g.type(g.at("head.1")), (graph::TensorType{DType::F64, {5, 4}}));
  EXPECT_EQ(g.node(g.at("head.1")).op, graph::OpKind::Relu);
  const auto params = g.parameters();
  ASSERT_EQ(params.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(g.node(params[i]).name, specs[i].name);
    EXPECT_EQ(g.type(params[i]), (graph::TensorType{DType::F64, specs[i].shape}));
  }
}

TEST(NnModules, NestedSequentialAndCopies) {
  Sequential inner(Linear(2, 2));
  Sequential outer;
  outer.append(inner).append(SiLU()).append(Sequential(Linear(2, 1), ReLU()));
  const auto specs = parameters(outer);
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].name, "0.0.weight");
  EXPECT_EQ(specs[3].name, "2.0.bias");
  // Graph names may not start with a digit, so a bare Sequential needs a prefix for its parameters...
  graph::Graph g;
  const graph::Value x = g.input("x", DType::F32, {1, 2});
  EXPECT_THROW(outer.forward(Scope(g, DType::F32), x), graph::GraphError);
  // ...and with one, results are named after the outermost child that produced them.
  graph::Graph g2;
  const graph::Value y = outer.forward(Scope(g2, DType::F32, "model."), g2.input("x", DType::F32, {1, 2}));
  EXPECT_EQ(g2.type(y).shape, (graph::Shape{1, 1}));
  EXPECT_EQ(g2.node(y).name, "model.2");
  EXPECT_EQ(g2.node(g2.at("model.0")).op, graph::OpKind::Add);  // inner Linear's bias add
  EXPECT_EQ(g2.node(g2.at("model.1")).op, graph::OpKind::Silu);
  EXPECT_TRUE(g2.find("model.0.0.weight").has_value());
  // Without parameters, a bare Sequential works and leaves generated names (no name may start with a digit).
  graph::Graph g3;
  const graph::Value z = Sequential(ReLU(), SiLU()).forward(Scope(g3, DType::F32), g3.input("x", DType::F32, {3}));
  EXPECT_EQ(g3.node(z).op, graph::OpKind::Silu);
  EXPECT_FALSE(g3.find("1").has_value());
  const Sequential copy = outer;  // shares the immutable children
  EXPECT_EQ(copy.size(), 3u);
  EXPECT_EQ(parameters(copy).size(), 4u);
}

TEST(NnModules, ConvolutionShapesGroupsAndBounds) {
  const Conv2d conv(4, 8, 3, {.stride = 2, .padding = 1, .groups = 2});
  const auto specs = parameters(conv);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].shape, (graph::Shape{8, 2, 3, 3}));
  EXPECT_DOUBLE_EQ(specs[0].init_bound, 1.0 / std::sqrt(18.0));  // fan_in = 4/2 * 3 * 3
  EXPECT_DOUBLE_EQ(specs[1].init_bound, 1.0 / std::sqrt(18.0));

  graph::Graph g;
  const graph::Value x = g.input("x", DType::F32, {2, 4, 9, 9});
  const graph::Value y = conv.forward(Scope(g, DType::F32), x);
  EXPECT_EQ(g.type(y).shape, (graph::Shape{2, 8, 5, 5}));  // (9 + 2 - 3) / 2 + 1
  const graph::Value p = MaxPool2d(2).forward(Scope(g, DType::F32), y);
  EXPECT_EQ(g.type(p).shape, (graph::Shape{2, 8, 2, 2}));
  const graph::Value f = Flatten().forward(Scope(g, DType::F32), p);
  EXPECT_EQ(g.type(f).shape, (graph::Shape{2, 32}));

  EXPECT_THROW(Conv2d(3, 8, 3, {.groups = 2}), std::invalid_argument);
  EXPECT_THROW(Linear(0, 3), std::invalid_argument);
  EXPECT_THROW(MaxPool2d(2, 2, 2), std::invalid_argument);
}

TEST(NnModules, ReprsMatchPyTorch) {
  EXPECT_EQ(Conv2d(1, 6, 5, {.padding = 2}).repr(), "Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))");
  EXPECT_EQ(Conv2d(6, 16, 5).repr(), "Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1))");
  EXPECT_EQ(Linear(784, 120).repr(), "Linear(in_features=784, out_features=120, bias=True)");
  EXPECT_EQ(MaxPool2d(2).repr(), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  EXPECT_EQ(Flatten().repr(), "Flatten(start_dim=1, end_dim=-1)");
  EXPECT_EQ(Sequential(ReLU(), SiLU()).repr(), "Sequential(\n  (0): ReLU()\n  (1): SiLU()\n)");
}

TEST(NnInit, UniformWithinBoundFilledAndDeterministic) {
  const std::vector<ParameterSpec> specs{{"w", {300, 200}, 0.05}, {"b", {7}, 0.5}};
  const auto a = init_parameters(specs, DType::F64, 42);
  const auto b = init_parameters(specs, DType::F64, 42);
  const auto c = init_parameters(specs, DType::F64, 43);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].second.data, b[0].second.data);
  EXPECT_NE(a[0].second.data, c[0].second.data);

  const auto& w = a[0].second.data;
  double lo = 1, hi = -1, sum = 0, sum_sq = 0;
  for (double v : w) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    sum_sq += v * v;
  }
  const double n = double(w.size());
  EXPECT_GE(lo, -0.05);
  EXPECT_LT(hi, 0.05);
  // 60000 draws of U(-b, b): the extremes come within 1e-3 b of the bounds (the chance they do not is
  // about 2 e^-60), the mean is 0 +- b/sqrt(3n) ~ 1.2e-4 (5 sigma here), the variance b^2/3.
  EXPECT_LT(lo, -0.05 * 0.999);
  EXPECT_GT(hi, 0.05 * 0.999);
  EXPECT_NEAR(sum / n, 0.0, 5 * 0.05 / std::sqrt(3 * n));
  EXPECT_NEAR(sum_sq / n, 0.05 * 0.05 / 3, 0.02 * 0.05 * 0.05 / 3);
}

TEST(NnInit, F32ValuesAreFloats) {
  const auto t = init_parameters({{"w", {100}, 1.0}}, DType::F32, 1);
  for (double v : t[0].second.data) EXPECT_EQ(v, double(float(v)));
  EXPECT_EQ(t[0].second.dtype, DType::F32);
}

}  // namespace
}  // namespace spire::nn
