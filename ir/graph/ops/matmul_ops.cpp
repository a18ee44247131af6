// matmul, wholly defined here: shape rule, VJP, float64 reference, cost and tolerances. Its lowering is
// lowering/lower_matmul.cpp, its harness cases op_harness/cases_matmul.cpp.
//
//   matmul(a [.., M, K], b [.., K, N]) -> [.., M, N]; both rank >= 2, batch dimensions broadcast (numpy /
//   torch.matmul for inputs of rank >= 2)
//
// It keeps its OpKind (OpKind::Matmul) and builder method (g.matmul): the passes, fusion and the linear
// layer name it.
#include "base/parallel_for.h"
#include "ir/graph/ops/common.h"
#include "ir/graph/shape_checks.h"

namespace spire::graph::ops {

namespace {

TensorType matmul_shape(const ShapeContext& c) {
  shape_checks::require_same_dtype(c, 0, 1);
  shape_checks::require_float(c, 0);
  const Shape& a = c.inputs[0].shape;
  const Shape& b = c.inputs[1].shape;
  if (a.size() < 2) c.fail(fmt::format("{} must have rank >= 2 ([.., M, K])", c.describe_input(0)));
  if (b.size() < 2) c.fail(fmt::format("{} must have rank >= 2 ([.., K, N])", c.describe_input(1)));
  if (a[a.size() - 1] != b[b.size() - 2])
    c.fail(fmt::format("inner dimensions differ: {} has K={}, {} has K={}", c.describe_input(0), a[a.size() - 1],
                       c.describe_input(1), b[b.size() - 2]));
  Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(batch_a, batch_b);
  if (!batch)
    c.fail(fmt::format("batch dimensions of {} and {} do not broadcast", c.describe_input(0), c.describe_input(1)));
  Shape out = *batch;
  out.push_back(a[a.size() - 2]);
  out.push_back(b[b.size() - 1]);
  return {c.inputs[0].dtype, out};
}

// C = A B: dA = dC B^T, dB = A^T dC, each summed over broadcast batch dimensions.
std::vector<Value> matmul_vjp(VjpContext& c) {
  Graph& g = c.g;
  const Node n = g.node(c.out);
  const Shape a = g.type(n.inputs[0]).shape, b = g.type(n.inputs[1]).shape;
  auto reduce_to = [&](Value grad, const Shape& shape) { return g.type(grad).shape == shape ? grad : g.sum_to(grad, shape); };
  Value g0, g1;
  if (c.wants(0)) g0 = reduce_to(g.matmul(c.grad_out, g.transpose(n.inputs[1])), a);
  if (c.wants(1)) g1 = reduce_to(g.matmul(g.transpose(n.inputs[0]), c.grad_out), b);
  return {g0, g1};
}

// Each output matrix is computed with the i-k-j loop order so the innermost loop streams rows of b and of the
// output contiguously.
Tensor matmul_reference(const Node& n, eval::Inputs in) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  Tensor out = eval::result_of(n);
  if (a.rank() < 2 || b.rank() < 2 || out.rank() < 2)
    eval::fail(n, fmt::format("needs inputs of rank >= 2, got {} and {}", a.type().to_string(), b.type().to_string()));
  const int64_t M = a.shape[a.shape.size() - 2];
  const int64_t K = a.shape.back();
  const int64_t N = b.shape.back();
  if (b.shape[b.shape.size() - 2] != K || out.shape[out.shape.size() - 2] != M || out.shape.back() != N)
    eval::fail(n, fmt::format("shapes {} x {} -> {} do not agree", a.type().to_string(), b.type().to_string(),
                              n.type.to_string()));

  const Shape a_batch(a.shape.begin(), a.shape.end() - 2);
  const Shape b_batch(b.shape.begin(), b.shape.end() - 2);
  const Shape out_batch(out.shape.begin(), out.shape.end() - 2);
  // Strides in units of whole matrices, 0 along broadcast batch dimensions.
  const std::vector<int64_t> a_read = eval::broadcast_strides(a_batch, out_batch);
  const std::vector<int64_t> b_read = eval::broadcast_strides(b_batch, out_batch);

  eval::for_each_index<2>(out_batch, {&a_read, &b_read}, [&](int64_t batch, const std::array<int64_t, 2>& off) {
    const double* pa = a.data.data() + off[0] * M * K;
    const double* pb = b.data.data() + off[1] * K * N;
    double* pc = out.data.data() + batch * M * N;
    // Rows split over threads: each writes its own rows of C, every element summed in the serial order.
    parallel_for(M, K * N, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        double* row = pc + i * N;
        for (int64_t k = 0; k < K; ++k) {
          const double aik = pa[i * K + k];
          const double* brow = pb + k * N;
          for (int64_t j = 0; j < N; ++j) row[j] += aik * brow[j];
        }
      }
    });
  });
  return out;
}


}  // namespace

std::vector<OpInfo> matmul_ops() {
  return {
      {.kind = OpKind::Matmul, .name = "matmul", .arity = 2, .category = OpCategory::Heavy, .shape = matmul_shape,
       .vjp = matmul_vjp, .reference = matmul_reference, .forward = kHeavy, .backward = kHeavy, .cost = product_cost},
  };
}

}  // namespace spire::graph::ops
