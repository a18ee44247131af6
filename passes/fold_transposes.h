// Pass 1b, fold transposes: fewer permute launches around matrix products. Autograd's matmul gradients are
// products with transposed operands (grad_a = grad x b^T, grad_b = a^T x grad), and models store weights
// transposed (PyTorch's Linear computes x W^T), so a training step is full of 2D transposes, each a launch and a
// round trip through memory. This pass rewrites
//   * permute(permute(x)) into one permute, or into x when the two cancel (W^T^T = W), and
//   * a 2D transpose of a product whose only user it is, (a x b)^T, into b^T x a^T,
// so that the transposes left stand next to the products that read them; fuse_pointwise's companion,
// absorbed_transpose, then lets the product read such an operand in place (matmul_kernel's transposed
// operands) and the transpose disappears.
//
// The result is a new graph with the same leaves, outputs and state updates under the same names.
#pragma once

#include "ir/graph/graph.h"

namespace spire::passes {

graph::Graph fold_transposes(const graph::Graph& g);

}  // namespace spire::passes
