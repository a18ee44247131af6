// matmul: a hand-multiplied 2x3 by 3x2 product, and broadcast batch dimensions checked against a plain
// triple loop written here.
#include "tests/ir/graph/evaluator/eval_test_util.h"

namespace spire::graph::test {
namespace matmul_test {  // named, not anonymous: test executables build as unity batches

Tensor matmul(const Tensor& a, const Tensor& b) {
  Graph g;
  Value va = g.input("a", a.dtype, a.shape);
  Value vb = g.input("b", b.dtype, b.shape);
  g.output("y", g.matmul(va, vb));
  return eval_output(g, {{"a", a}, {"b", b}});
}

TEST(EvalMatmul, HandMultiplied) {
  // [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]].
  expect_values(matmul(f64({2, 3}, {1, 2, 3, 4, 5, 6}), f64({3, 2}, {7, 8, 9, 10, 11, 12})), {2, 2},
                {58, 64, 139, 154});
}

TEST(EvalMatmul, BroadcastBatchDimensions) {
  // a [2,1,2,3] x b [3,3,2] -> [2,3,2,2]: out[p][q] = a[p][0] x b[q].
  Tensor a = random_tensor(DType::F64, {2, 1, 2, 3}, 11);
  Tensor b = random_tensor(DType::F64, {3, 3, 2}, 12);
  Tensor y = matmul(a, b);
  ASSERT_EQ(y.shape, (Shape{2, 3, 2, 2}));
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t q = 0; q < 3; ++q)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j) {
          double want = 0;
          for (int64_t k = 0; k < 3; ++k) want += a.at({p, 0, i, k}) * b.at({q, k, j});
          EXPECT_NEAR(y.at({p, q, i, j}), want, 1e-14) << p << q << i << j;
        }
}

TEST(EvalMatmul, InfinityTimesZeroIsNaNLikeIeee) {
  // No shortcut skips zero entries of a: 0 * inf contributes NaN as in a plain dot product.
  const double inf = std::numeric_limits<double>::infinity();
  Tensor y = matmul(f64({1, 2}, {0, 1}), f64({2, 1}, {inf, 2}));
  EXPECT_TRUE(std::isnan(y.data[0]));
}

}  // namespace matmul_test
}  // namespace spire::graph::test
