// Leaves: values no op computes. Inputs, parameters and states are fed by the caller; a constant is a scalar
// fill value (the IR holds no literal tensors).
#include "ir/graph/ops/common.h"

namespace spire::graph::ops {

std::vector<OpInfo> leaves() {
  const TestDomain none{};
  return {
      {.kind = OpKind::Input, .name = "input", .category = OpCategory::Leaf, .forward = kCopy, .backward = kCopy},
      {.kind = OpKind::Parameter, .name = "parameter", .category = OpCategory::Leaf, .forward = kCopy,
       .backward = kCopy},
      {.kind = OpKind::State, .name = "state", .attrs = {{"init", K::Float}}, .category = OpCategory::Leaf,
       .forward = kCopy, .backward = kCopy},
      // The harness reads constants through add, mul (folded into the kernel) and matmul (a buffer).
      {.kind = OpKind::Constant, .name = "constant", .attrs = {{"value", K::Float}}, .category = OpCategory::Leaf,
       .forward = {1e-5, 1e-13, "read through add, mul and matmul: matmul's bound (a dot product of 33 terms)"},
       .backward = {1e-5, 1e-13, "the gradients of those ops: matmul's bound"}},
  };
}

}  // namespace spire::graph::ops
