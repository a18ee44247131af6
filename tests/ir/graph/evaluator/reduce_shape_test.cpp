// Reductions (sum, mean, max with keepdim), sum_to, and the layout ops (reshape, flatten, permute,
// broadcast_to), on small tensors whose results are written out by hand.
#include <cmath>
#include <limits>

#include "tests/ir/graph/evaluator/eval_test_util.h"

namespace spire::graph::test {
namespace reduce_shape_test {  // named, not anonymous: test executables build as unity batches

const double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class Op>
Tensor apply(Op op, const Tensor& x) {
  Graph g;
  Value vx = g.input("x", x.dtype, x.shape);
  g.output("y", op(g, vx));
  return eval_output(g, {{"x", x}});
}

// x[2,3] = [[1, 2, 3], [4, 5, 6]]
Tensor two_by_three() { return f64({2, 3}, {1, 2, 3, 4, 5, 6}); }

TEST(EvalReduce, SumOverEachAxisAndAll) {
  expect_values(apply([](Graph& g, Value x) { return g.sum(x, {0}); }, two_by_three()), {3}, {5, 7, 9});
  expect_values(apply([](Graph& g, Value x) { return g.sum(x, {1}); }, two_by_three()), {2}, {6, 15});
  expect_values(apply([](Graph& g, Value x) { return g.sum(x, {1}, true); }, two_by_three()), {2, 1}, {6, 15});
  expect_values(apply([](Graph& g, Value x) { return g.sum(x); }, two_by_three()), {}, {21});
  expect_values(apply([](Graph& g, Value x) { return g.sum(x, {-1}); }, two_by_three()), {2}, {6, 15});
}

TEST(EvalReduce, EmptyAxesIsTheIdentity) {
  expect_values(apply([](Graph& g, Value x) { return g.sum(x, {}); }, two_by_three()), {2, 3}, {1, 2, 3, 4, 5, 6});
}

TEST(EvalReduce, NonAdjacentAxesOfARank3Tensor) {
  // x[2,2,2] = 0..7; summing axes 0 and 2 leaves axis 1: y[j] = sum_{i,k} x[i][j][k].
  // j = 0: 0+1+4+5 = 10; j = 1: 2+3+6+7 = 18.
  Tensor x = f64({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  expect_values(apply([](Graph& g, Value v) { return g.sum(v, {0, 2}); }, x), {2}, {10, 18});
  expect_values(apply([](Graph& g, Value v) { return g.sum(v, {0, 2}, true); }, x), {1, 2, 1}, {10, 18});
  expect_values(apply([](Graph& g, Value v) { return g.max(v, {0, 2}); }, x), {2}, {5, 7});
}

TEST(EvalReduce, MeanAndMax) {
  expect_values(apply([](Graph& g, Value x) { return g.mean(x); }, two_by_three()), {}, {3.5});
  expect_values(apply([](Graph& g, Value x) { return g.mean(x, {0}, true); }, two_by_three()), {1, 3},
                {2.5, 3.5, 4.5});
  expect_values(apply([](Graph& g, Value x) { return g.max(x, {1}); }, two_by_three()), {2}, {3, 6});
  // Ties and all-negative rows: the value is the maximum whichever element holds it.
  expect_values(apply([](Graph& g, Value x) { return g.max(x, {1}, true); }, f64({2, 3}, {-5, -2, -2, 7, 7, 1})),
                {2, 1}, {-2, 7});
}

TEST(EvalReduce, MaxPropagatesNaN) {
  expect_values(apply([](Graph& g, Value x) { return g.max(x, {1}); }, f64({2, 3}, {1, kNaN, 3, 4, 5, 6})), {2},
                {kNaN, 6});
}

TEST(EvalReduce, IntegerSumAndMaxStayIntegers) {
  Tensor x = Tensor::from(DType::I32, {2, 2}, {-3, -9, 4, 2});
  Tensor s = apply([](Graph& g, Value v) { return g.sum(v, {0}); }, x);
  EXPECT_EQ(s.dtype, DType::I32);
  expect_values(s, {2}, {1, -7}, 0);
  expect_values(apply([](Graph& g, Value v) { return g.max(v, {1}); }, x), {2}, {-3, 4}, 0);
}

TEST(EvalReduce, SumToInvertsBroadcasting) {
  expect_values(apply([](Graph& g, Value x) { return g.sum_to(x, {1, 3}); }, two_by_three()), {1, 3}, {5, 7, 9});
  expect_values(apply([](Graph& g, Value x) { return g.sum_to(x, {3}); }, two_by_three()), {3}, {5, 7, 9});
  expect_values(apply([](Graph& g, Value x) { return g.sum_to(x, {2, 1}); }, two_by_three()), {2, 1}, {6, 15});
  expect_values(apply([](Graph& g, Value x) { return g.sum_to(x, {}); }, two_by_three()), {}, {21});
  expect_values(apply([](Graph& g, Value x) { return g.sum_to(x, {2, 3}); }, two_by_three()), {2, 3},
                {1, 2, 3, 4, 5, 6});
}

TEST(EvalReduce, SumToIsTheAdjointOfBroadcastTo) {
  // <broadcast_to(a), B> == <a, sum_to(B)> for a of shape [3,1,4] broadcast to [2,3,5,4].
  Tensor a = random_tensor(DType::F64, {3, 1, 4}, 1);
  Tensor big = random_tensor(DType::F64, {2, 3, 5, 4}, 2);
  Tensor up = apply([](Graph& g, Value x) { return g.broadcast_to(x, {2, 3, 5, 4}); }, a);
  Tensor down = apply([](Graph& g, Value x) { return g.sum_to(x, {3, 1, 4}); }, big);
  EXPECT_NEAR(dot(up, big), dot(a, down), 1e-12);
}

TEST(EvalShape, ReshapeAndFlattenKeepRowMajorData) {
  expect_values(apply([](Graph& g, Value x) { return g.reshape(x, {3, 2}); }, two_by_three()), {3, 2},
                {1, 2, 3, 4, 5, 6});
  expect_values(apply([](Graph& g, Value x) { return g.flatten(x, 0, -1); }, two_by_three()), {6},
                {1, 2, 3, 4, 5, 6});
  Tensor four = f64({1, 2, 2, 1}, {1, 2, 3, 4});
  expect_values(apply([](Graph& g, Value x) { return g.flatten(x); }, four), {1, 4}, {1, 2, 3, 4});
}

TEST(EvalShape, TransposeOfAMatrix) {
  expect_values(apply([](Graph& g, Value x) { return g.transpose(x); }, two_by_three()), {3, 2},
                {1, 4, 2, 5, 3, 6});
}

TEST(EvalShape, PermuteOfARank3Tensor) {
  // y = permute(x, [2, 0, 1]): y[i][j][k] = x[j][k][i]; x[a][b][c] = 100a + 10b + c, shape [2,3,4].
  std::vector<double> values;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) values.push_back(100 * a + 10 * b + c);
  Tensor y = apply([](Graph& g, Value x) { return g.permute(x, {2, 0, 1}); }, f64({2, 3, 4}, values));
  ASSERT_EQ(y.shape, (Shape{4, 2, 3}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(y.at({i, j, k}), 100 * j + 10 * k + i);
}

TEST(EvalShape, BroadcastTo) {
  expect_values(apply([](Graph& g, Value x) { return g.broadcast_to(x, {2, 3}); }, f64({3}, {1, 2, 3})), {2, 3},
                {1, 2, 3, 1, 2, 3});
  expect_values(apply([](Graph& g, Value x) { return g.broadcast_to(x, {2, 2, 3}); }, f64({2, 1}, {7, 8})),
                {2, 2, 3}, {7, 7, 7, 8, 8, 8, 7, 7, 7, 8, 8, 8});
  expect_values(apply([](Graph& g, Value x) { return g.broadcast_to(x, {2, 2}); }, f64({}, {5})), {2, 2},
                {5, 5, 5, 5});
}

}  // namespace reduce_shape_test
}  // namespace spire::graph::test
