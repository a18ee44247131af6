// Pass 3, fuse: chains of pointwise ops become one kernel. A pointwise value is computed inside its user's
// kernel (no buffer, no launch, no round trip through memory) when
//   * its only use is as one input of one pointwise op of the same shape (so nothing is computed twice), and
//   * it is not a graph output nor a state update's new value (those must land in memory).
// Trees of such values end at a root, whose lowering (lower_elementwise) emits the whole tree. The bias add
// and ReLU of a layer, and an optimizer's update arithmetic, each become one launch.
#pragma once

#include <vector>

#include "ir/graph/graph.h"

namespace spire::lowering {

// Ops lower_elementwise computes one element at a time.
bool is_pointwise(graph::OpKind op);

// A 2D transpose that every user reads as a matrix-product operand (and that is not stored): the products read
// its input in place (matmul_kernel's transposed operands), so it has no buffer and no launch.
bool absorbed_transpose(const graph::Graph& g, graph::Value v);

// Index = value id: true when that value is fused into its user (pointwise chains, absorbed transposes).
std::vector<bool> fuse_pointwise(const graph::Graph& g);

}  // namespace spire::lowering
