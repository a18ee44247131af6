// Pooling: max with ties (the first maximum in row-major window order gets the gradient), padding that never
// wins, avg with count_include_pad, floor mode, and identities against the forward ops on random inputs.
#include <limits>

#include "tests/ir/graph/evaluator/eval_test_util.h"

namespace spire::graph::test {
namespace pool_test {  // named, not anonymous: test executables build as unity batches

Tensor max_pool(const Tensor& x, const Pool2dOptions& o) {
  Graph g;
  g.output("y", g.max_pool2d(g.input("x", x.dtype, x.shape), o));
  return eval_output(g, {{"x", x}});
}
Tensor avg_pool(const Tensor& x, const Pool2dOptions& o) {
  Graph g;
  g.output("y", g.avg_pool2d(g.input("x", x.dtype, x.shape), o));
  return eval_output(g, {{"x", x}});
}
Tensor max_pool_grad(const Tensor& gy, const Tensor& x, const Pool2dOptions& o) {
  Graph g;
  g.output("y", g.max_pool2d_grad(g.input("gy", gy.dtype, gy.shape), g.input("x", x.dtype, x.shape), o));
  return eval_output(g, {{"gy", gy}, {"x", x}});
}
Tensor avg_pool_grad(const Tensor& gy, const Shape& x_shape, const Pool2dOptions& o) {
  Graph g;
  g.output("y", g.avg_pool2d_grad(g.input("gy", gy.dtype, gy.shape), o, x_shape));
  return eval_output(g, {{"gy", gy}});
}

// Windows of 2x2, stride 2: {1,3,5,0} {2,4,1,1} {7,7,7,6} {9,2,2,9}; the last two hold ties.
Tensor tied_input() {
  return f64({1, 1, 4, 4}, {1, 3, 2, 4,  //
                            5, 0, 1, 1,  //
                            7, 7, 9, 2,  //
                            7, 6, 2, 9});
}

TEST(EvalPool, MaxPoolValues) {
  expect_values(max_pool(tied_input(), {}), {1, 1, 2, 2}, {5, 4, 7, 9});
}

TEST(EvalPool, MaxPoolGradGoesToTheFirstMaximum) {
  // Window (1,0) holds 7 at (2,0), (2,1), (3,0): row-major first is (2,0). Window (1,1) holds 9 at (2,2) and
  // (3,3): first is (2,2).
  Tensor gx = max_pool_grad(f64({1, 1, 2, 2}, {1, 2, 3, 4}), tied_input(), {});
  expect_values(gx, {1, 1, 4, 4}, {0, 0, 0, 2,  //
                                   1, 0, 0, 0,  //
                                   3, 0, 4, 0,  //
                                   0, 0, 0, 0});
}

TEST(EvalPool, OverlappingWindowsAccumulateGradient) {
  // 3x1 input [1, 5, 2] as a 1x3 row, kernel 1x2, stride 1: both windows pick the 5.
  Tensor x = f64({1, 1, 1, 3}, {1, 5, 2});
  Pool2dOptions o{.kernel = {1, 2}, .stride = {1, 1}};
  expect_values(max_pool(x, o), {1, 1, 1, 2}, {5, 5});
  expect_values(max_pool_grad(f64({1, 1, 1, 2}, {10, 20}), x, o), {1, 1, 1, 3}, {0, 30, 0});
}

TEST(EvalPool, PaddingNeverWins) {
  // All-negative input: a zero from the padding must not be the maximum.
  Tensor x = f64({1, 1, 2, 2}, {-1, -2, -3, -4});
  expect_values(max_pool(x, {.kernel = {2, 2}, .stride = {2, 2}, .padding = {1, 1}}), {1, 1, 2, 2},
                {-1, -2, -3, -4});
  expect_values(max_pool(x, {.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}}), {1, 1, 2, 2},
                {-1, -1, -1, -1});
  // Every 3x3 window holds the whole input, so all four gradients land on x[0][0].
  expect_values(max_pool_grad(f64({1, 1, 2, 2}, {1, 2, 3, 4}), x, {.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}}),
                {1, 1, 2, 2}, {10, 0, 0, 0});
}

TEST(EvalPool, MaxPoolPropagatesNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor y = max_pool(f64({1, 1, 2, 2}, {1, nan, 3, 2}), {});
  EXPECT_TRUE(std::isnan(y.data[0]));
}

TEST(EvalPool, FloorModeDropsTheRemainder) {
  // 5x5, kernel 2, stride 2: 2x2 windows over rows/cols 0..3; row and column 4 are never read.
  std::vector<double> v(25);
  for (int i = 0; i < 25; ++i) v[size_t(i)] = i;
  Tensor x = f64({1, 1, 5, 5}, v);
  expect_values(max_pool(x, {}), {1, 1, 2, 2}, {6, 8, 16, 18});
  Tensor gx = max_pool_grad(f64({1, 1, 2, 2}, {1, 1, 1, 1}), x, {});
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(gx.at({0, 0, 4, i}), 0);
    EXPECT_EQ(gx.at({0, 0, i, 4}), 0);
  }
}

TEST(EvalPool, AvgPoolCountsThePadding) {
  // count_include_pad=True: each 2x2 window with padding 1 holds one real element and divides by 4.
  Tensor x = f64({1, 1, 2, 2}, {1, 2, 3, 4});
  expect_values(avg_pool(x, {.kernel = {2, 2}, .stride = {2, 2}, .padding = {1, 1}}), {1, 1, 2, 2},
                {0.25, 0.5, 0.75, 1});
  // 3x3 windows, stride 1, padding 1: each covers all four elements and divides by 9.
  expect_values(avg_pool(x, {.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}}), {1, 1, 2, 2},
                {10.0 / 9, 10.0 / 9, 10.0 / 9, 10.0 / 9}, 1e-15);
  // No padding: a plain mean of each window of tied_input(): (1+3+5+0)/4 = 2.25, ...
  expect_values(avg_pool(tied_input(), {}), {1, 1, 2, 2}, {2.25, 2, 6.75, 5.5});
}

TEST(EvalPool, AvgPoolGradSpreadsEvenly) {
  // Kernel 2, stride 1 on 1x3: x0 gets g0/2, x1 gets (g0+g1)/2, x2 gets g1/2.
  expect_values(avg_pool_grad(f64({1, 1, 1, 2}, {4, 8}), {1, 1, 1, 3}, {.kernel = {1, 2}, .stride = {1, 1}}),
                {1, 1, 1, 3}, {2, 6, 4});
}

struct PoolCase {
  Shape x;
  Pool2dOptions opt;
};
std::vector<PoolCase> pool_cases() {
  return {
      {{2, 3, 8, 8}, {}},
      {{2, 3, 7, 9}, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}},
      {{1, 2, 6, 5}, {.kernel = {2, 3}, .stride = {1, 2}, .padding = {1, 0}}},
      {{1, 1, 5, 5}, {.kernel = {4, 4}, .stride = {3, 3}, .padding = {2, 2}}},
  };
}

TEST(EvalPool, AvgPoolGradIsTheAdjoint) {
  uint64_t seed = 300;
  for (const PoolCase& c : pool_cases()) {
    SCOPED_TRACE(shape_to_string(c.x));
    Tensor x = random_tensor(DType::F64, c.x, seed++);
    Tensor y = avg_pool(x, c.opt);
    Tensor gy = random_tensor(DType::F64, y.shape, seed++);
    EXPECT_NEAR(dot(y, gy), dot(x, avg_pool_grad(gy, c.x, c.opt)), 1e-12);
  }
}

TEST(EvalPool, MaxPoolGradRoutesEachWindowToAnElementHoldingItsMaximum) {
  // max_pool is linear in x once the argmax is fixed, so <max_pool(x), g> == <x, max_pool_grad(g, x)>; and
  // with random (distinct) values the grad is the derivative: perturbing a non-winning element changes nothing.
  uint64_t seed = 400;
  for (const PoolCase& c : pool_cases()) {
    SCOPED_TRACE(shape_to_string(c.x));
    Tensor x = random_tensor(DType::F64, c.x, seed++);
    Tensor y = max_pool(x, c.opt);
    Tensor gy = random_tensor(DType::F64, y.shape, seed++);
    Tensor gx = max_pool_grad(gy, x, c.opt);
    EXPECT_NEAR(dot(y, gy), dot(x, gx), 1e-12);
    // Directional derivative along a random direction d: (max_pool(x + h d) - max_pool(x - h d)) / 2h.
    Tensor d = random_tensor(DType::F64, c.x, seed++);
    const double h = 1e-7;
    Tensor xp = x, xm = x;
    for (size_t i = 0; i < x.data.size(); ++i) xp.data[i] += h * d.data[i], xm.data[i] -= h * d.data[i];
    const double numeric = (dot(max_pool(xp, c.opt), gy) - dot(max_pool(xm, c.opt), gy)) / (2 * h);
    EXPECT_NEAR(dot(d, gx), numeric, 1e-6);
  }
}

}  // namespace pool_test
}  // namespace spire::graph::test
