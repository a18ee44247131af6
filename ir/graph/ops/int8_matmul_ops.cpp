// matmul_int8_weight, wholly defined here: shape rule, float64 reference, cost and tolerances. Its lowering is
// lowering/lower_int8_matmul.cpp, its harness cases op_harness/cases_int8_matmul.cpp; passes/int8_weights.h makes
// it from a matmul by a constant weight.
//
//   matmul_int8_weight(x [.., M, K] float, w [N, ceil(K/4)] i32, scale [N] x's dtype) -> [.., M, N]
//   y[.., m, n] = scale[n] * sum_k x[.., m, k] * q[n, k]
//
// A matmul by a weight [K, N] stored as int8 per output channel (row n of its transpose), with a scale per row: a
// decoder's token reads each weight once, so a quarter of f32's bytes is up to four times the speed. There is no
// int8 dtype, so w holds the bytes four to a word: q[n, k] is byte k % 4 (little-endian, two's complement) of
// w[n, k / 4], and the bytes past K in the last word are ignored. Inference only: no VJP.
#include "ir/graph/ops/common.h"
#include "ir/graph/shape_checks.h"

namespace spire::graph::ops {

namespace {

TensorType int8_matmul_shape(const ShapeContext& c) {
  shape_checks::require_float(c, 0);
  shape_checks::require_same_dtype(c, 0, 2);
  if (c.inputs[1].dtype != DType::I32) c.fail(fmt::format("{} must be i32 (four int8 a word)", c.describe_input(1)));
  const Shape& x = c.inputs[0].shape;
  if (x.size() < 2) c.fail(fmt::format("{} must have rank >= 2 ([.., M, K])", c.describe_input(0)));
  shape_checks::require_rank(c, 1, 2, "[N, ceil(K/4)]");
  shape_checks::require_rank(c, 2, 1, "[N]");
  const int64_t K = x.back(), N = c.inputs[1].shape[0];
  if (c.inputs[1].shape[1] != (K + 3) / 4)
    c.fail(fmt::format("{} holds {} words a row where K={} of {} needs {}", c.describe_input(1), c.inputs[1].shape[1],
                       K, c.describe_input(0), (K + 3) / 4));
  if (c.inputs[2].shape[0] != N)
    c.fail(fmt::format("{} must have one scale per row of {}", c.describe_input(2), c.describe_input(1)));
  Shape out = x;
  out.back() = N;
  return {c.inputs[0].dtype, out};
}

// Byte k % 4 of a word as a signed 8-bit integer.
double int8_of(double word, int64_t k) {
  const auto bits = uint32_t(int32_t(int64_t(word)));
  const auto byte = int32_t((bits >> (8 * (k % 4))) & 0xFFu);
  return double(byte >= 128 ? byte - 256 : byte);
}

Tensor int8_matmul_reference(const Node& n, eval::Inputs in) {
  const Tensor& x = *in[0];
  const Tensor& w = *in[1];
  const Tensor& scale = *in[2];
  Tensor out = eval::result_of(n);
  const int64_t K = x.shape.back(), N = w.shape[0], words = w.shape[1], rows = x.numel() / std::max<int64_t>(K, 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += x[r * K + k] * int8_of(w[j * words + k / 4], k);
      out[r * N + j] = scale[j] * sum;
    }
  return out;
}


}  // namespace

std::vector<OpInfo> int8_matmul_ops() {
  return {
      {.name = "matmul_int8_weight", .arity = 3, .category = OpCategory::Heavy, .shape = int8_matmul_shape,
       .reference = int8_matmul_reference,
       .forward = {1e-5, 1e-13, "a dot product of up to a few thousand terms (the integers exact in the float type) "
                                "summed in the device's precision, times the scale"},
       .backward = {0, 0, "inference only: no VJP, so no gradient to check"}, .cost = product_cost},
  };
}

}  // namespace spire::graph::ops
