// Layout ops: elements move, none is computed. Backward of broadcast_to is a sum over the broadcast dims.
// Cases in op_harness/cases_layout.cpp.
#include "ir/graph/ops/common.h"

namespace spire::graph::ops {

namespace {
// Row-major storage makes a reshape a view: lowering aliases the input's buffer, nothing moves.
OpCost view_cost(const Node&, std::span<const TensorType>) { return {}; }
}  // namespace

std::vector<OpInfo> layout() {
  const OpCategory L = OpCategory::Layout;
  return {
      {.kind = OpKind::Reshape, .name = "reshape", .arity = 1, .attrs = {{"shape", K::Ints}}, .category = L,
       .shape = S::reshape, .vjp = V::reshape, .reference = eval::reshape, .forward = kCopy, .backward = kCopy,
       .cost = view_cost},
      {.kind = OpKind::Flatten, .name = "flatten", .arity = 1, .attrs = {{"start_dim", K::Int}, {"end_dim", K::Int}},
       .category = L, .shape = S::flatten, .vjp = V::reshape, .reference = eval::reshape, .forward = kCopy,
       .backward = kCopy, .cost = view_cost},
      {.kind = OpKind::Permute, .name = "permute", .arity = 1, .attrs = {{"perm", K::Ints}}, .category = L,
       .shape = S::permute, .vjp = V::permute, .reference = eval::permute, .forward = kCopy, .backward = kCopy},
      {.kind = OpKind::BroadcastTo, .name = "broadcast_to", .arity = 1, .attrs = {{"shape", K::Ints}},
       .category = L, .shape = S::broadcast_to, .vjp = V::broadcast_to, .reference = eval::broadcast_to,
       .forward = kCopy, .backward = kReduction},
  };
}

}  // namespace spire::graph::ops
