// Reductions over `axes` (sorted, non-negative, unique; empty = no axis, the identity) with keepdim, and
// sum_to (the inverse of a broadcast). sum: not bool; mean: float only; max is PyTorch's amax.
// Cases in op_harness/cases_reduction.cpp (one invocation per output, one workgroup per output, chunked splits).
#include "ir/graph/ops/common.h"

namespace spire::graph::ops {

std::vector<OpInfo> reductions() {
  const std::vector<AttrSpec> reduce_attrs = {{"axes", K::Ints}, {"keepdim", K::Bool}};
  const OpCategory R = OpCategory::Reduction;
  return {
      {.kind = OpKind::Sum, .name = "sum", .arity = 1, .attrs = reduce_attrs, .category = R, .autocast_f32 = true,
       .shape = S::reduce,
       .vjp = V::sum, .reference = eval::reduce, .forward = kReduction, .backward = kCopy},
      {.kind = OpKind::Mean, .name = "mean", .arity = 1, .attrs = reduce_attrs, .category = R, .autocast_f32 = true,
       .shape = S::reduce,
       .vjp = V::mean, .reference = eval::reduce, .forward = kReduction, .backward = kExact},
      {.kind = OpKind::Max, .name = "max", .arity = 1, .attrs = reduce_attrs, .category = R, .shape = S::reduce,
       .vjp = V::max, .reference = eval::reduce, .forward = kCopy, .backward = kCopy},
      // Backward of sum_to is a broadcast (exact).
      {.kind = OpKind::SumTo, .name = "sum_to", .arity = 1, .attrs = {{"shape", K::Ints}}, .category = R,
       .autocast_f32 = true, .shape = S::sum_to, .vjp = V::sum_to, .reference = eval::sum_to, .forward = kReduction, .backward = kCopy},
  };
}

}  // namespace spire::graph::ops
