// Elementwise ops: values derived by hand (closed forms such as sigmoid(ln 3) = 3/4), broadcasting, NaN rules
// as PyTorch has them, and the activation gradients against central differences of their definitions.
#include <cmath>
#include <limits>

#include "tests/ir/graph/evaluator/eval_test_util.h"

namespace spire::graph::test {
namespace pointwise_test {  // named, not anonymous: test executables build as unity batches

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// y = op(a, b) for two f64 inputs.
template <class Op>
Tensor binary(Op op, const Tensor& a, const Tensor& b) {
  Graph g;
  Value va = g.input("a", a.dtype, a.shape);
  Value vb = g.input("b", b.dtype, b.shape);
  g.output("y", op(g, va, vb));
  return eval_output(g, {{"a", a}, {"b", b}});
}

template <class Op>
Tensor unary(Op op, const Tensor& x, DType compute = DType::F64) {
  Graph g;
  Value vx = g.input("x", x.dtype, x.shape);
  g.output("y", op(g, vx));
  return eval_output(g, {{"x", x}}, "y", compute);
}

TEST(EvalPointwise, BroadcastColumnPlusRow) {
  // [3,1] + [1,4]: y[i][j] = a[i] + b[j].
  Tensor y = binary([](Graph& g, Value a, Value b) { return g.add(a, b); }, f64({3, 1}, {1, 2, 3}),
                    f64({1, 4}, {10, 20, 30, 40}));
  expect_values(y, {3, 4}, {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
}

TEST(EvalPointwise, BroadcastMissingLeadingDimsAndScalar) {
  // [2,3] - [3]: the row is subtracted from each row; [2,3] * scalar.
  Tensor y = binary([](Graph& g, Value a, Value b) { return g.sub(a, b); }, f64({2, 3}, {1, 2, 3, 4, 5, 6}),
                    f64({3}, {1, 1, 2}));
  expect_values(y, {2, 3}, {0, 1, 1, 3, 4, 4});
  Tensor z = binary([](Graph& g, Value a, Value b) { return g.mul(a, b); }, f64({2, 3}, {1, 2, 3, 4, 5, 6}),
                    f64({}, {-2}));
  expect_values(z, {2, 3}, {-2, -4, -6, -8, -10, -12});
}

TEST(EvalPointwise, ArithmeticValues) {
  Tensor a = f64({4}, {6, -3, 2, 9});
  Tensor b = f64({4}, {3, 4, 0.5, -2});
  expect_values(binary([](Graph& g, Value x, Value y) { return g.div(x, y); }, a, b), {4}, {2, -0.75, 4, -4.5});
  expect_values(binary([](Graph& g, Value x, Value y) { return g.pow(x, y); }, f64({3}, {2, 9, 4}),
                       f64({3}, {10, 0.5, -1})),
                {3}, {1024, 3, 0.25});
  expect_values(binary([](Graph& g, Value x, Value y) { return g.maximum(x, y); }, a, b), {4}, {6, 4, 2, 9});
  expect_values(binary([](Graph& g, Value x, Value y) { return g.minimum(x, y); }, a, b), {4}, {3, -3, 0.5, -2});
}

TEST(EvalPointwise, DivisionByZeroFollowsIeee) {
  expect_values(binary([](Graph& g, Value x, Value y) { return g.div(x, y); }, f64({3}, {1, -1, 0}),
                       f64({3}, {0, 0, 0})),
                {3}, {kInf, -kInf, kNaN});
}

TEST(EvalPointwise, MaximumMinimumPropagateNaN) {
  Tensor a = f64({2}, {kNaN, 1});
  Tensor b = f64({2}, {1, kNaN});
  expect_values(binary([](Graph& g, Value x, Value y) { return g.maximum(x, y); }, a, b), {2}, {kNaN, kNaN});
  expect_values(binary([](Graph& g, Value x, Value y) { return g.minimum(x, y); }, a, b), {2}, {kNaN, kNaN});
}

TEST(EvalPointwise, IntegerArithmeticIsExact) {
  Tensor a = Tensor::from(DType::I64, {3}, {9007199254740000.0, -7, 5});
  Tensor b = Tensor::from(DType::I64, {3}, {991, 3, -5});
  Tensor y = binary([](Graph& g, Value x, Value z) { return g.add(x, z); }, a, b);
  EXPECT_EQ(y.dtype, DType::I64);
  expect_values(y, {3}, {9007199254740991.0, -4, 0}, 0);
  Tensor n = unary([](Graph& g, Value x) { return g.relu(g.neg(x)); }, Tensor::from(DType::I32, {3}, {4, -6, 0}));
  EXPECT_EQ(n.dtype, DType::I32);
  expect_values(n, {3}, {0, 6, 0}, 0);
}

TEST(EvalPointwise, CompareModesAndNaN) {
  Tensor a = f64({4}, {1, 2, 3, kNaN});
  Tensor b = f64({4}, {2, 2, 2, kNaN});
  auto cmp = [&](CompareMode m) {
    return binary([m](Graph& g, Value x, Value y) { return g.compare(x, y, m); }, a, b);
  };
  Tensor lt = cmp(CompareMode::Lt);
  EXPECT_EQ(lt.dtype, DType::Bool);
  expect_values(lt, {4}, {1, 0, 0, 0});
  expect_values(cmp(CompareMode::Le), {4}, {1, 1, 0, 0});
  expect_values(cmp(CompareMode::Gt), {4}, {0, 0, 1, 0});
  expect_values(cmp(CompareMode::Ge), {4}, {0, 1, 1, 0});
  expect_values(cmp(CompareMode::Eq), {4}, {0, 1, 0, 0});
  expect_values(cmp(CompareMode::Ne), {4}, {1, 0, 1, 1});  // NaN != NaN
}

TEST(EvalPointwise, WhereBroadcastsAllThree) {
  Graph g;
  Value c = g.input("c", DType::Bool, {2, 1});
  Value a = g.input("a", DType::F64, {1, 3});
  Value b = g.input("b", DType::F64, {});
  g.output("y", g.where(c, a, b));
  Tensor y = eval_output(g, {{"c", Tensor::from(DType::Bool, {2, 1}, {1, 0})}, {"a", f64({1, 3}, {1, 2, 3})},
                             {"b", f64({}, {-1})}});
  expect_values(y, {2, 3}, {1, 2, 3, -1, -1, -1});
}

TEST(EvalPointwise, CastTruncatesTowardZeroAndBoolIsNonZero) {
  Tensor x = f64({5}, {-1.7, 2.5, 0, -0.2, 3});
  Tensor i = unary([](Graph& g, Value v) { return g.cast(v, DType::I32); }, x);
  EXPECT_EQ(i.dtype, DType::I32);
  expect_values(i, {5}, {-1, 2, 0, 0, 3}, 0);
  Tensor b = unary([](Graph& g, Value v) { return g.cast(v, DType::Bool); }, f64({4}, {-1.7, 0, kNaN, 0.25}));
  EXPECT_EQ(b.dtype, DType::Bool);
  expect_values(b, {4}, {1, 0, 1, 1}, 0);
  Tensor f = unary([](Graph& g, Value v) { return g.cast(v, DType::F32); }, Tensor::from(DType::Bool, {2}, {1, 0}));
  EXPECT_EQ(f.dtype, DType::F32);
  expect_values(f, {2}, {1, 0}, 0);
}

TEST(EvalPointwise, CastOfNaNToIntegerIsAnError) {
  EXPECT_THROW(unary([](Graph& g, Value v) { return g.cast(v, DType::I64); }, f64({1}, {kNaN})), GraphError);
}

TEST(EvalPointwise, UnaryClosedForms) {
  const double ln2 = std::log(2.0), ln3 = std::log(3.0);
  Tensor x = f64({3}, {0, ln2, -ln3});
  expect_values(unary([](Graph& g, Value v) { return g.neg(v); }, x), {3}, {0, -ln2, ln3});
  expect_values(unary([](Graph& g, Value v) { return g.exp(v); }, x), {3}, {1, 2, 1.0 / 3.0}, 1e-15);
  expect_values(unary([](Graph& g, Value v) { return g.log(v); }, f64({4}, {1, 8, 0, -1})), {4},
                {0, 3 * ln2, -kInf, kNaN}, 1e-15);
  expect_values(unary([](Graph& g, Value v) { return g.sqrt(v); }, f64({3}, {16, 2.25, -4})), {3}, {4, 1.5, kNaN});
  // tanh(ln 2) = (4 - 1) / (4 + 1); sigmoid(ln 3) = 3 / 4; sigmoid(-ln 3) = 1 / 4.
  expect_values(unary([](Graph& g, Value v) { return g.tanh(v); }, x), {3}, {0, 0.6, -0.8}, 1e-15);
  expect_values(unary([](Graph& g, Value v) { return g.sigmoid(v); }, f64({3}, {0, ln3, -ln3})), {3},
                {0.5, 0.75, 0.25}, 1e-15);
  expect_values(unary([](Graph& g, Value v) { return g.silu(v); }, f64({3}, {0, ln3, -ln3})), {3},
                {0, 0.75 * ln3, -0.25 * ln3}, 1e-15);
  expect_values(unary([](Graph& g, Value v) { return g.relu(v); }, f64({4}, {-2, 0, 3, kNaN})), {4}, {0, 0, 3, kNaN});
}

TEST(EvalPointwise, SigmoidSaturatesWithoutNaN) {
  expect_values(unary([](Graph& g, Value v) { return g.sigmoid(v); }, f64({2}, {-1000, 1000})), {2}, {0, 1});
}

TEST(EvalPointwise, GeluIsTheTanhForm) {
  // PyTorch's gelu(approximate='tanh') at 1, -2 and 0.5 (the tanh form, not the erf form: gelu_erf(1) = 0.8413).
  expect_values(unary([](Graph& g, Value v) { return g.gelu(v); }, f64({4}, {0, 1, -2, 0.5})), {4},
                {0, 0.8411919906082768, -0.04540230591222494, 0.34571400982514394}, 1e-15);
}

// grad * d act / dx against a central difference of the activation written out here.
template <class Grad>
void check_activation_grad(Grad make_grad, double (*act)(double)) {
  Tensor x = f64({7}, {-3, -1.2, -0.3, 0.1, 0.7, 1.9, 4});
  Tensor g = f64({7}, {1, -2, 0.5, 3, -1, 2, 0.25});
  Graph graph;
  Value vg = graph.input("g", DType::F64, {7});
  Value vx = graph.input("x", DType::F64, {7});
  graph.output("y", make_grad(graph, vg, vx));
  Tensor y = eval_output(graph, {{"g", g}, {"x", x}});
  const double h = 1e-5;
  for (size_t i = 0; i < 7; ++i) {
    const double numeric = g.data[i] * (act(x.data[i] + h) - act(x.data[i] - h)) / (2 * h);
    EXPECT_NEAR(y.data[i], numeric, 1e-8) << "x = " << x.data[i];
  }
}

double silu_ref(double x) { return x / (1 + std::exp(-x)); }
double gelu_ref(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(EvalPointwise, SiluGradIsTheDerivative) {
  check_activation_grad([](Graph& g, Value gr, Value x) { return g.silu_grad(gr, x); }, silu_ref);
}

TEST(EvalPointwise, GeluGradIsTheDerivative) {
  check_activation_grad([](Graph& g, Value gr, Value x) { return g.gelu_grad(gr, x); }, gelu_ref);
}

TEST(EvalPointwise, ReluGradPassesWherePositive) {
  Graph g;
  Value gr = g.input("g", DType::F64, {5});
  Value x = g.input("x", DType::F64, {5});
  g.output("y", g.relu_grad(gr, x));
  // threshold_backward: x <= 0 gives 0 (x = 0 included); NaN is not <= 0, so its gradient passes.
  Tensor y = eval_output(g, {{"g", f64({5}, {1, 2, 3, 4, 5})}, {"x", f64({5}, {-1, 0, 0.5, 7, kNaN})}});
  expect_values(y, {5}, {0, 0, 3, 4, 5});
}

}  // namespace pointwise_test
}  // namespace spire::graph::test
