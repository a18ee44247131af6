// LeNet-5 (the seed article's: conv 6@5x5 pad 2, pool, conv 16@5x5 pad 2, pool, 784-120-84-10) with its
// backward pass written out with the backward ops, so the evaluator tests can run a whole training step's
// arithmetic without depending on autograd.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tests/ir/graph/evaluator/eval_test_util.h"
#include "tests/support/named_ops.h"

namespace spire::graph::test {

struct LeNet {
  Graph graph;
  std::vector<std::pair<std::string, Shape>> parameters;  // name, shape
};

// Outputs: "loss", "logits", and "grad.<parameter>" for every parameter.
inline LeNet build_lenet(int64_t batch, DType dtype) {
  LeNet net;
  Graph& g = net.graph;
  auto param = [&](const std::string& name, Shape shape) {
    net.parameters.emplace_back(name, shape);
    return g.parameter(name, dtype, std::move(shape));
  };
  Value x = g.input("x", dtype, {batch, 1, 28, 28});
  Value labels = g.input("labels", DType::I64, {batch});
  Value w1 = param("conv1.weight", {6, 1, 5, 5}), b1 = param("conv1.bias", {6});
  Value w2 = param("conv2.weight", {16, 6, 5, 5}), b2 = param("conv2.bias", {16});
  Value w3 = param("fc1.weight", {120, 16 * 7 * 7}), b3 = param("fc1.bias", {120});
  Value w4 = param("fc2.weight", {84, 120}), b4 = param("fc2.bias", {84});
  Value w5 = param("fc3.weight", {10, 84}), b5 = param("fc3.bias", {10});
  const Conv2dOptions c1{.padding = {2, 2}}, c2{.padding = {2, 2}};
  const Pool2dOptions pool{};

  // Forward.
  Value a1 = g.add(g.conv2d(x, w1, c1), g.reshape(b1, {1, 6, 1, 1}));
  Value h1 = g.relu(a1);
  Value p1 = g.max_pool2d(h1, pool);
  Value a2 = g.add(g.conv2d(p1, w2, c2), g.reshape(b2, {1, 16, 1, 1}));
  Value h2 = g.relu(a2);
  Value p2 = g.max_pool2d(h2, pool);
  Value f = g.flatten(p2);
  auto linear = [&](Value in, Value w, Value b) { return g.add(g.matmul(in, g.transpose(w)), b); };
  Value h3 = g.relu(linear(f, w3, b3));
  Value h4 = g.relu(linear(h3, w4, b4));
  Value logits = linear(h4, w5, b5);
  g.output("logits", logits);
  g.output("loss", cross_entropy(g, logits, labels));

  // Backward.
  auto linear_back = [&](Value gy, Value in, Value w, const std::string& name) {
    g.output("grad." + name + ".weight", g.matmul(g.transpose(gy), in));
    g.output("grad." + name + ".bias", g.sum(gy, {0}));
    return g.matmul(gy, w);
  };
  Value g_logits = cross_entropy_grad(g, g.scalar(1.0, dtype), logits, labels);
  Value g_h4 = linear_back(g_logits, h4, w5, "fc3");
  Value g_h3 = linear_back(g.relu_grad(g_h4, h4), h3, w4, "fc2");
  Value g_f = linear_back(g.relu_grad(g_h3, h3), f, w3, "fc1");
  Value g_h2 = g.max_pool2d_grad(g.reshape(g_f, g.type(p2).shape), h2, pool);
  Value g_a2 = g.relu_grad(g_h2, h2);
  g.output("grad.conv2.weight", g.conv2d_grad_weight(g_a2, p1, c2, {16, 6, 5, 5}));
  g.output("grad.conv2.bias", g.sum(g_a2, {0, 2, 3}));
  Value g_h1 = g.max_pool2d_grad(g.conv2d_grad_input(g_a2, w2, c2, g.type(p1).shape), h1, pool);
  Value g_a1 = g.relu_grad(g_h1, h1);
  g.output("grad.conv1.weight", g.conv2d_grad_weight(g_a1, x, c1, {6, 1, 5, 5}));
  g.output("grad.conv1.bias", g.sum(g_a1, {0, 2, 3}));
  return net;
}

// Seeded inputs: images in [0, 1), labels 0..9, weights uniform in +-1/sqrt(fan_in) (PyTorch's default).
inline std::map<std::string, Tensor> lenet_feeds(const LeNet& net, int64_t batch, DType dtype, uint64_t seed) {
  std::map<std::string, Tensor> feeds;
  feeds["x"] = random_tensor(dtype, {batch, 1, 28, 28}, seed, 0.0, 1.0);
  Tensor labels(DType::I64, {batch});
  for (int64_t i = 0; i < batch; ++i) labels.data[size_t(i)] = double((i * 7 + int64_t(seed)) % 10);
  feeds["labels"] = labels;
  for (const auto& [name, shape] : net.parameters) {
    // Weights: +-1/sqrt(fan_in); biases: a fixed small range.
    int64_t fan_in = 1;
    for (size_t d = 1; d < shape.size(); ++d) fan_in *= shape[d];
    const double bound = shape.size() > 1 ? 1.0 / std::sqrt(double(fan_in)) : 0.2;
    feeds[name] = random_tensor(dtype, shape, ++seed, -bound, bound);
  }
  return feeds;
}

}  // namespace spire::graph::test
