// softmax, log_softmax, cross_entropy and cross_entropy_grad: logits chosen so exp() gives small integers
// (0, ln 2, ln 3 -> 1, 2, 3), large logits that would overflow a naive exp, rows summing to 1 along any axis.
#include <cmath>

#include "tests/ir/graph/evaluator/eval_test_util.h"
#include "tests/support/named_ops.h"

namespace spire::graph::test {
namespace softmax_loss_test {  // named, not anonymous: test executables build as unity batches

const double ln2 = std::log(2.0), ln3 = std::log(3.0), ln6 = std::log(6.0);

template <class Op>
Tensor apply(Op op, const Tensor& x) {
  Graph g;
  Value vx = g.input("x", x.dtype, x.shape);
  g.output("y", op(g, vx));
  return eval_output(g, {{"x", x}});
}

TEST(EvalSoftmax, SmallIntegerExponentials) {
  // Row [0, ln2, ln3]: exp = [1, 2, 3], softmax = [1/6, 2/6, 3/6]; row [ln3, 0, ln2] likewise permuted.
  Tensor x = f64({2, 3}, {0, ln2, ln3, ln3, 0, ln2});
  expect_values(apply([](Graph& g, Value v) { return softmax(g, v); }, x), {2, 3},
                {1.0 / 6, 2.0 / 6, 3.0 / 6, 3.0 / 6, 1.0 / 6, 2.0 / 6}, 1e-15);
  expect_values(apply([](Graph& g, Value v) { return log_softmax(g, v); }, x), {2, 3},
                {-ln6, ln2 - ln6, ln3 - ln6, ln3 - ln6, -ln6, ln2 - ln6}, 1e-15);
}

TEST(EvalSoftmax, LargeLogitsDoNotOverflow) {
  Tensor x = f64({2, 2}, {1000, 1000, -1000, 1000 + ln3});
  expect_values(apply([](Graph& g, Value v) { return softmax(g, v); }, x), {2, 2}, {0.5, 0.5, 0, 1}, 1e-15);
  // log_softmax of [1000, 1000] is -ln 2 each, exactly representable without overflow.
  expect_values(apply([](Graph& g, Value v) { return log_softmax(g, v); }, f64({1, 2}, {1000, 1000})), {1, 2},
                {-ln2, -ln2}, 1e-13);
}

TEST(EvalSoftmax, RowsSumToOneAlongAMiddleAxis) {
  Tensor x = random_tensor(DType::F64, {3, 5, 4}, 7, -5, 5);
  Tensor y = apply([](Graph& g, Value v) { return softmax(g, v, 1); }, x);
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t c = 0; c < 4; ++c) {
      double s = 0, m = -1e300;
      for (int64_t b = 0; b < 5; ++b) s += y.at({a, b, c}), m = std::max(m, x.at({a, b, c}));
      EXPECT_NEAR(s, 1.0, 1e-14);
      // And each entry is exp(x - m) normalised: check one against the definition.
      double z = 0;
      for (int64_t b = 0; b < 5; ++b) z += std::exp(x.at({a, b, c}) - m);
      EXPECT_NEAR(y.at({a, 2, c}), std::exp(x.at({a, 2, c}) - m) / z, 1e-15);
    }
}

TEST(EvalSoftmax, AxisZero) {
  // Columns [0, ln3] -> [1/4, 3/4]; [ln2, ln2] -> [1/2, 1/2].
  expect_values(apply([](Graph& g, Value v) { return softmax(g, v, 0); }, f64({2, 2}, {0, ln2, ln3, ln2})), {2, 2},
                {0.25, 0.5, 0.75, 0.5}, 1e-15);
}

Graph cross_entropy_graph(DType label_dtype) {
  Graph g;
  Value logits = g.input("logits", DType::F64, {2, 3});
  Value labels = g.input("labels", label_dtype, {2});
  Value gy = g.input("gy", DType::F64, {});
  g.output("loss", cross_entropy(g, logits, labels));
  g.output("grad", cross_entropy_grad(g, gy, logits, labels));
  return g;
}

TEST(EvalCrossEntropy, KnownLogits) {
  // Row 0: softmax [1/6, 1/3, 1/2], label 2 -> -log(1/2) = ln 2.
  // Row 1: softmax [1/2, 1/6, 1/3], label 1 -> -log(1/6) = ln 6. Mean: (ln 2 + ln 6) / 2.
  for (DType label_dtype : {DType::I32, DType::I64}) {
    Graph g = cross_entropy_graph(label_dtype);
    auto out = evaluate(g, {{"logits", f64({2, 3}, {0, ln2, ln3, ln3, 0, ln2})},
                            {"labels", Tensor::from(label_dtype, {2}, {2, 1})},
                            {"gy", f64({}, {2})}});
    expect_values(out["loss"], {}, {(ln2 + ln6) / 2}, 1e-15);
    // grad = gy / N * (softmax - one_hot) = 1 * ([1/6, 1/3, -1/2], [1/2, -5/6, 1/3]).
    expect_values(out["grad"], {2, 3}, {1.0 / 6, 1.0 / 3, -0.5, 0.5, -5.0 / 6, 1.0 / 3}, 1e-15);
  }
}

TEST(EvalCrossEntropy, LargeLogitsStayFinite) {
  Graph g = cross_entropy_graph(DType::I64);
  auto out = evaluate(g, {{"logits", f64({2, 3}, {1000, 1000, 1000, -1000, 0, 1000})},
                          {"labels", Tensor::from(DType::I64, {2}, {0, 2})},
                          {"gy", f64({}, {1})}});
  // Row 0: ln 3. Row 1: log(exp(-2000) + exp(-1000) + 1) ~ 0.
  expect_values(out["loss"], {}, {std::log(3.0) / 2}, 1e-13);
}

TEST(EvalCrossEntropy, GradMatchesCentralDifferences) {
  Graph g;
  Value logits = g.input("logits", DType::F64, {4, 5});
  Value labels = g.input("labels", DType::I64, {4});
  g.output("loss", cross_entropy(g, logits, labels));
  g.output("grad", cross_entropy_grad(g, g.scalar(1.0, DType::F64), logits, labels));
  Tensor x = random_tensor(DType::F64, {4, 5}, 21, -3, 3);
  Tensor y = Tensor::from(DType::I64, {4}, {4, 0, 2, 2});
  Tensor grad = evaluate(g, {{"logits", x}, {"labels", y}})["grad"];
  const double h = 1e-6;
  for (size_t i = 0; i < x.data.size(); ++i) {
    Tensor xp = x, xm = x;
    xp.data[i] += h, xm.data[i] -= h;
    const double numeric = (evaluate(g, {{"logits", xp}, {"labels", y}})["loss"].data[0] -
                            evaluate(g, {{"logits", xm}, {"labels", y}})["loss"].data[0]) / (2 * h);
    EXPECT_NEAR(grad.data[i], numeric, 1e-8) << "element " << i;
  }
}

TEST(EvalCrossEntropy, LabelOutOfRangeIsAnError) {
  Graph g = cross_entropy_graph(DType::I64);
  for (double bad : {3.0, -1.0}) {
    try {
      evaluate(g, {{"logits", f64({2, 3}, {0, 0, 0, 0, 0, 0})},
                   {"labels", Tensor::from(DType::I64, {2}, {0, bad})},
                   {"gy", f64({}, {1})}});
      ADD_FAILURE() << "label " << bad << " was accepted";
    } catch (const GraphError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("cross_entropy"), std::string::npos) << msg;
      EXPECT_NE(msg.find("out of range for 3 classes"), std::string::npos) << msg;
      EXPECT_NE(msg.find("sample 1"), std::string::npos) << msg;
    }
  }
}

}  // namespace softmax_loss_test
}  // namespace spire::graph::test
