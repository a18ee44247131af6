// Pass 1c, sums through max pooling's gradient. A CNN layer's bias gradient is the sum over the batch and both
// spatial dims of the pooled layer's gradient scattered back through the pooling and masked by the layer's ReLU:
//
//   sum_to(relu_grad(max_pool2d_grad(g, y), y), shape)
//
// max_pool2d_grad sends each element of g to one position of its window (the window's first maximum of y) and zeros
// everywhere else, and the ReLU mask there is y > 0 at that maximum, which is max_pool2d(y) > 0. So where the sum
// covers both spatial dims it equals
//
//   sum_to(relu_grad(g, max_pool2d(y)), shape)
//
// over the pooled elements only (a quarter of them for 2x2 windows of stride 2), and the product, read by nothing
// else, is computed in the reduction's loads (fuse.h's prologues) instead of being stored. Without the ReLU,
// sum_to(max_pool2d_grad(g, y), shape) becomes sum_to(g, shape). The rewrite needs the graph's own
// max_pool2d(y) with the same window (the forward pass's), and pays only where the pooled tensor is smaller; the
// terms added are the same nonzero ones as before, in another order.
//
// The result is a new graph with the same leaves, outputs and state updates under the same names; the sum keeps its
// name, the mask a fresh one.
#pragma once

#include "ir/graph/graph.h"

namespace spire::passes {

graph::Graph sum_through_max_pool(const graph::Graph& g);

}  // namespace spire::passes
