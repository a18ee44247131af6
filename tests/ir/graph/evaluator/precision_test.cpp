// F32 compute against F64 compute on random inputs: every op alone agrees to float's rounding (1e-6 relative),
// and a whole LeNet step agrees to 1e-6 relative to each output's largest magnitude; F32 results are floats.
#include <cmath>

#include "tests/ir/graph/evaluator/lenet_graph.h"
#include "tests/support/named_ops.h"

namespace spire::graph::test {
namespace precision_test {  // named, not anonymous: test executables build as unity batches

// One output per op family over f32 inputs (positive where the op needs it).
Graph every_op_graph() {
  Graph g;
  Value a = g.input("a", DType::F32, {4, 6});
  Value b = g.input("b", DType::F32, {1, 6});
  Value p = g.input("p", DType::F32, {4, 6});  // positive
  Value img = g.input("img", DType::F32, {2, 4, 7, 7});
  Value w = g.input("w", DType::F32, {6, 2, 3, 3});
  Value gconv = g.input("gconv", DType::F32, {2, 6, 4, 4});
  Value gpool = g.input("gpool", DType::F32, {2, 4, 4, 4});
  Value labels = g.input("labels", DType::I32, {4});
  const Conv2dOptions conv{.stride = {2, 2}, .padding = {1, 1}, .groups = 2};
  const Pool2dOptions pool{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}};
  g.output("add", g.add(a, b));
  g.output("sub", g.sub(a, b));
  g.output("mul", g.mul(a, b));
  g.output("div", g.div(a, p));
  g.output("pow", g.pow(p, b));
  g.output("maximum", g.maximum(a, b));
  g.output("exp", g.exp(a));
  g.output("log", g.log(p));
  g.output("sqrt", g.sqrt(p));
  g.output("tanh", g.tanh(a));
  g.output("sigmoid", g.sigmoid(a));
  g.output("silu", g.silu(a));
  g.output("gelu", g.gelu(a));
  g.output("silu_grad", g.silu_grad(p, a));
  g.output("gelu_grad", g.gelu_grad(p, a));
  g.output("sum", g.sum(a, {1}));
  g.output("mean", g.mean(a, {0}, true));
  g.output("max", g.max(a, {1}));
  g.output("matmul", g.matmul(a, g.transpose(p)));
  g.output("conv2d", g.conv2d(img, w, conv));
  g.output("conv2d_grad_input", g.conv2d_grad_input(gconv, w, conv, {2, 4, 7, 7}));
  g.output("conv2d_grad_weight", g.conv2d_grad_weight(gconv, img, conv, {6, 2, 3, 3}));
  g.output("max_pool2d", g.max_pool2d(img, pool));
  g.output("max_pool2d_grad", g.max_pool2d_grad(gpool, img, pool));
  g.output("avg_pool2d", g.avg_pool2d(img, pool));
  g.output("avg_pool2d_grad", g.avg_pool2d_grad(gpool, pool, {2, 4, 7, 7}));
  g.output("softmax", softmax(g, a));
  g.output("log_softmax", log_softmax(g, a));
  g.output("cross_entropy", cross_entropy(g, a, labels));
  g.output("cross_entropy_grad", cross_entropy_grad(g, g.scalar(1.0, DType::F32), a, labels));
  return g;
}

std::map<std::string, Tensor> every_op_feeds() {
  return {{"a", random_tensor(DType::F32, {4, 6}, 1, -2, 2)},
          {"b", random_tensor(DType::F32, {1, 6}, 2, -2, 2)},
          {"p", random_tensor(DType::F32, {4, 6}, 3, 0.5, 2)},
          {"img", random_tensor(DType::F32, {2, 4, 7, 7}, 4)},
          {"w", random_tensor(DType::F32, {6, 2, 3, 3}, 5)},
          {"gconv", random_tensor(DType::F32, {2, 6, 4, 4}, 6)},
          {"gpool", random_tensor(DType::F32, {2, 4, 4, 4}, 7)},
          {"labels", Tensor::from(DType::I32, {4}, {5, 0, 3, 3})}};
}

void expect_all_floats(const std::string& name, const Tensor& t) {
  for (double v : t.data)
    if (double(float(v)) != v && !std::isnan(v)) {
      ADD_FAILURE() << name << " holds " << v << ", which is not a float";
      return;
    }
}

TEST(EvalPrecision, EveryOpAgreesElementwiseToFloatRounding) {
  Graph g = every_op_graph();
  auto feeds = every_op_feeds();
  auto wide = evaluate(g, feeds, DType::F64);
  auto narrow = evaluate(g, feeds, DType::F32);
  ASSERT_EQ(wide.size(), g.outputs().size());
  for (const auto& [name, w] : wide) {
    SCOPED_TRACE(name);
    const Tensor& n = narrow.at(name);
    ASSERT_EQ(n.shape, w.shape);
    expect_all_floats(name, n);
    for (size_t i = 0; i < w.data.size(); ++i)
      ASSERT_NEAR(n.data[i], w.data[i], 1e-6 * std::abs(w.data[i]) + 1e-30) << "element " << i;
  }
}

TEST(EvalPrecision, LeNetStepAgreesAcrossPrecisions) {
  const int64_t batch = 8;
  LeNet net = build_lenet(batch, DType::F32);
  auto feeds = lenet_feeds(net, batch, DType::F32, 9);
  auto wide = evaluate(net.graph, feeds, DType::F64);
  auto narrow = evaluate(net.graph, feeds, DType::F32);
  for (const auto& [name, w] : wide) {
    SCOPED_TRACE(name);
    const Tensor& n = narrow.at(name);
    expect_all_floats(name, n);
    double scale = 0;
    for (double v : w.data) scale = std::max(scale, std::abs(v));
    ASSERT_GT(scale, 0);
    for (size_t i = 0; i < w.data.size(); ++i)
      ASSERT_NEAR(n.data[i], w.data[i], 1e-6 * scale) << "element " << i;
  }
}

}  // namespace precision_test
}  // namespace spire::graph::test
