// matmul: [.., M, K] x [.., K, N] -> [.., M, N], batch dimensions broadcast (numpy / torch.matmul for inputs
// of rank >= 2). Each output matrix is computed with the i-k-j loop order so the innermost loop streams rows
// of b and of the output contiguously.
#include <fmt/format.h>

#include "ir/graph/eval_ops.h"

namespace spire::graph::eval {

Tensor matmul(const Node& n, Inputs in) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  Tensor out = result_of(n);
  if (a.rank() < 2 || b.rank() < 2 || out.rank() < 2)
    fail(n, fmt::format("needs inputs of rank >= 2, got {} and {}", a.type().to_string(), b.type().to_string()));
  const int64_t M = a.shape[a.shape.size() - 2];
  const int64_t K = a.shape.back();
  const int64_t N = b.shape.back();
  if (b.shape[b.shape.size() - 2] != K || out.shape[out.shape.size() - 2] != M || out.shape.back() != N)
    fail(n, fmt::format("shapes {} x {} -> {} do not agree", a.type().to_string(), b.type().to_string(),
                        n.type.to_string()));

  const Shape a_batch(a.shape.begin(), a.shape.end() - 2);
  const Shape b_batch(b.shape.begin(), b.shape.end() - 2);
  const Shape out_batch(out.shape.begin(), out.shape.end() - 2);
  // Strides in units of whole matrices, 0 along broadcast batch dimensions.
  const std::vector<int64_t> a_read = broadcast_strides(a_batch, out_batch);
  const std::vector<int64_t> b_read = broadcast_strides(b_batch, out_batch);

  for_each_index<2>(out_batch, {&a_read, &b_read}, [&](int64_t batch, const std::array<int64_t, 2>& off) {
    const double* pa = a.data.data() + off[0] * M * K;
    const double* pb = b.data.data() + off[1] * K * N;
    double* pc = out.data.data() + batch * M * N;
    for (int64_t i = 0; i < M; ++i) {
      double* row = pc + i * N;
      for (int64_t k = 0; k < K; ++k) {
        const double aik = pa[i * K + k];
        const double* brow = pb + k * N;
        for (int64_t j = 0; j < N; ++j) row[j] += aik * brow[j];
      }
    }
  });
  return out;
}

}  // namespace spire::graph::eval
