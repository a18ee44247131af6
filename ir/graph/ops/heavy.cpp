// Heavy ops: each has a kernel template of its own (kernels/) and a lowering function in
// lowering/op_lowering.cpp. Cases in op_harness/cases_heavy.cpp.
#include "ir/graph/ops/common.h"

namespace spire::graph::ops {

std::vector<AttrSpec> conv_attrs() {
  return {{"stride", K::Ints}, {"padding", K::Ints}, {"dilation", K::Ints}, {"groups", K::Int}};
}
std::vector<AttrSpec> pool_attrs() { return {{"kernel", K::Ints}, {"stride", K::Ints}, {"padding", K::Ints}}; }

int64_t pool_window(const Node& n) {
  const Pool2dOptions o = pool2d_options(n);
  return o.kernel[0] * o.kernel[1];
}

namespace {

// Costs (op_table.h's OpCost: a multiply-add is 2 flops, bytes = inputs once + result once).
// [.., M, K] x [.., K, N]: K multiply-adds per result element, 2MKN per matrix.
OpCost matmul_cost(const Node& n, std::span<const TensorType> in) {
  return {2 * n.type.numel() * in[0].shape.back(), io_bytes(n, in)};
}
// Each result element is a dot product over one group's input channels and the kernel window: the weight's
// elements per output channel, Cin/groups * kh * kw. The bias, when there is one, is a separate add.
OpCost conv2d_cost(const Node& n, std::span<const TensorType> in) {
  const int64_t per_output = in[1].numel() / std::max<int64_t>(in[1].shape[0], 1);
  return {2 * n.type.numel() * per_output, io_bytes(n, in)};
}
// One compare (max) or add (avg, plus the 1/count multiply) per window element per result element.
OpCost max_pool_cost(const Node& n, std::span<const TensorType> in) {
  return {n.type.numel() * pool_window(n), io_bytes(n, in)};
}
OpCost avg_pool_cost(const Node& n, std::span<const TensorType> in) {
  return {n.type.numel() * (pool_window(n) + 1), io_bytes(n, in)};
}
// Per element: the row max, the subtraction, exp, the row sum and the division (log_softmax: the subtraction
// of the log-sum instead); the few per-row operations are left out.
OpCost softmax_cost(const Node& n, std::span<const TensorType> in) { return {5 * n.type.numel(), io_bytes(n, in)}; }
// log_softmax of the logits, then per row the label's entry negated and the mean over rows.
OpCost cross_entropy_cost(const Node& n, std::span<const TensorType> in) {
  return {5 * in[0].numel() + 2 * in[1].numel(), io_bytes(n, in)};
}

}  // namespace

std::vector<OpInfo> heavy() {
  const OpCategory H = OpCategory::Heavy;
  const Tolerance routes{1e-6, 1e-14, "routes each upstream gradient to one element; adds where windows overlap"};
  return {
      {.kind = OpKind::Matmul, .name = "matmul", .arity = 2, .category = H, .shape = S::matmul, .vjp = V::matmul,
       .reference = eval::matmul, .forward = kHeavy, .backward = kHeavy, .cost = matmul_cost},
      {.kind = OpKind::Conv2d, .name = "conv2d", .arity = 2, .attrs = conv_attrs(), .category = H,
       .shape = S::conv2d, .vjp = V::conv2d, .reference = eval::conv2d, .forward = kHeavy, .backward = kHeavy,
       .cost = conv2d_cost},
      {.kind = OpKind::MaxPool2d, .name = "max_pool2d", .arity = 1, .attrs = pool_attrs(), .category = H,
       .shape = S::pool2d, .vjp = V::max_pool2d, .reference = eval::max_pool2d, .forward = kCopy,
       .backward = routes, .cost = max_pool_cost},
      {.kind = OpKind::MaxPool2dArgmax, .name = "max_pool2d_argmax", .arity = 1, .attrs = pool_attrs(), .category = H,
       .shape = S::max_pool2d_argmax, .reference = eval::max_pool2d_argmax,
       .forward = {0, 0, "a position: the compares are exact"}, .backward = kCopy, .cost = max_pool_cost},
      {.kind = OpKind::AvgPool2d, .name = "avg_pool2d", .arity = 1, .attrs = pool_attrs(), .category = H,
       .shape = S::pool2d, .vjp = V::avg_pool2d, .reference = eval::avg_pool2d,
       .forward = {2e-6, 1e-14, "a sum of a few window elements times 1/count"}, .backward = kReduction,
       .cost = avg_pool_cost},
      {.kind = OpKind::Softmax, .name = "softmax", .arity = 1, .attrs = {{"axis", K::Int}}, .category = H,
       .shape = S::softmax, .vjp = V::softmax, .reference = eval::softmax, .forward = kSoftmax,
       .backward = {2e-5, 1e-12, "softmax, then y * (g - sum(g * y)): a row sum and products"},
       .cost = softmax_cost},
      {.kind = OpKind::LogSoftmax, .name = "log_softmax", .arity = 1, .attrs = {{"axis", K::Int}}, .category = H,
       .shape = S::softmax, .vjp = V::log_softmax, .reference = eval::softmax, .forward = kSoftmax,
       .backward = {2e-5, 1e-12, "exp of log_softmax and a row sum of the gradient"},
       .cost = softmax_cost},
      {.kind = OpKind::CrossEntropy, .name = "cross_entropy", .arity = 2, .category = H,
       .shape = S::cross_entropy, .vjp = V::cross_entropy, .reference = eval::cross_entropy,
       .forward = kSoftmax, .backward = kSoftmax, .cost = cross_entropy_cost},
  };
}

}  // namespace spire::graph::ops
