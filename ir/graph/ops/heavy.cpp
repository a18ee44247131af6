// Heavy ops: each has a kernel template of its own (lowering/heavy_kernels/) and a lowering function in
// lowering/op_lowering.cpp. Cases in op_harness/cases_heavy.cpp.
#include "ir/graph/ops/common.h"

namespace spire::graph::ops {

std::vector<AttrSpec> conv_attrs() {
  return {{"stride", K::Ints}, {"padding", K::Ints}, {"dilation", K::Ints}, {"groups", K::Int}};
}
std::vector<AttrSpec> pool_attrs() { return {{"kernel", K::Ints}, {"stride", K::Ints}, {"padding", K::Ints}}; }

std::vector<OpInfo> heavy() {
  const OpCategory H = OpCategory::Heavy;
  const Tolerance routes{1e-6, 1e-14, "routes each upstream gradient to one element; adds where windows overlap"};
  return {
      {.kind = OpKind::Matmul, .name = "matmul", .arity = 2, .category = H, .shape = S::matmul, .vjp = V::matmul,
       .reference = eval::matmul, .forward = kHeavy, .backward = kHeavy},
      {.kind = OpKind::Conv2d, .name = "conv2d", .arity = 2, .attrs = conv_attrs(), .category = H,
       .shape = S::conv2d, .vjp = V::conv2d, .reference = eval::conv2d, .forward = kHeavy, .backward = kHeavy},
      {.kind = OpKind::MaxPool2d, .name = "max_pool2d", .arity = 1, .attrs = pool_attrs(), .category = H,
       .shape = S::pool2d, .vjp = V::max_pool2d, .reference = eval::max_pool2d, .forward = kCopy,
       .backward = routes},
      {.kind = OpKind::AvgPool2d, .name = "avg_pool2d", .arity = 1, .attrs = pool_attrs(), .category = H,
       .shape = S::pool2d, .vjp = V::avg_pool2d, .reference = eval::avg_pool2d,
       .forward = {2e-6, 1e-14, "a sum of a few window elements times 1/count"}, .backward = kReduction},
      {.kind = OpKind::Softmax, .name = "softmax", .arity = 1, .attrs = {{"axis", K::Int}}, .category = H,
       .shape = S::softmax, .vjp = V::softmax, .reference = eval::softmax, .forward = kSoftmax,
       .backward = {2e-5, 1e-12, "softmax, then y * (g - sum(g * y)): a row sum and products"}},
      {.kind = OpKind::LogSoftmax, .name = "log_softmax", .arity = 1, .attrs = {{"axis", K::Int}}, .category = H,
       .shape = S::softmax, .vjp = V::log_softmax, .reference = eval::softmax, .forward = kSoftmax,
       .backward = {2e-5, 1e-12, "exp of log_softmax and a row sum of the gradient"}},
      {.kind = OpKind::CrossEntropy, .name = "cross_entropy", .arity = 2, .category = H,
       .shape = S::cross_entropy, .vjp = V::cross_entropy, .reference = eval::cross_entropy,
       .forward = kSoftmax, .backward = kSoftmax},
  };
}

}  // namespace spire::graph::ops
