// Pass 1d, max pooling's gradient from the windows' positions. Training a CNN stores each pooled layer's input y (a
// ReLU's output, four times the pooled tensor for 2x2 windows) only so the backward pass can find each window's maximum
// again:
//
//   p = max_pool2d(y)   ...   relu_grad(max_pool2d_grad(g, y), y)
//
// The forward pass knows where each maximum lies when it pools. With a = max_pool2d_argmax(y) (each window's position
// of its maximum, one i32 per pooled element) the gradient becomes
//
//   max_pool2d_grad_argmax(relu_grad(g, p), a)
//
// which reads neither y nor the ReLU's mask of it: max_pool2d_grad_argmax sends each window's gradient to the element a
// names and zeros elsewhere, and the ReLU's mask there is y > 0 at the window's maximum, p > 0 (a NaN maximum passes
// in both). Without the mask, max_pool2d_grad(g, y) becomes max_pool2d_grad_argmax(g, a). The same terms are added in the
// same order. Then y's only readers are the pooling and its positions, which a convolution's launch stores as side
// outputs (fuse.h), and y itself is never stored: for LeNet at batch 8192, 245 MB not written and not read back.
//
// The rewrite needs the graph's own max_pool2d(y) with the same window (the forward pass's). The result is a new graph
// with the same leaves, outputs and state updates under the same names; each rewritten node keeps its name, a pooling's
// positions are named after it (".argmax") and come right after it, the masks get fresh names (".pooled_mask").
#pragma once

#include "ir/graph/graph.h"

namespace spire::passes {

graph::Graph pool_grad_by_argmax(const graph::Graph& g);

}  // namespace spire::passes
