// Reverse-mode automatic differentiation on the graph IR.
//
//   Value loss = g.op("cross_entropy", {logits, labels});
//   std::vector<Value> grads = autograd::grad(g, loss, g.parameters());
//   for (size_t i = 0; i < grads.size(); ++i) g.output("grad." + g.node(g.parameters()[i]).name, grads[i]);
//
// The backward pass is appended to the same graph as ordinary ops (see each op's VJP rule in the op table),
// so everything downstream (printer, evaluator, lowering) treats it like the forward pass. What backward
// needs from forward (saved activations) is just an edge from a forward value to a backward op.
#pragma once

#include <vector>

#include "ir/graph/graph.h"

namespace spire::autograd {

// Appends the backward graph of `loss` (a float scalar, shape []) and returns d loss / d w for each `wrt`
// value (any float values of the graph, usually its parameters), each of w's exact type.
//
// Nodes are walked once in reverse topological order; each node that lies on a path from some `wrt` to
// `loss` calls its op's VJP rule, asking only for the input gradients that lead back to a `wrt`; several
// contributions to one value are summed with `add`. A `wrt` the loss does not depend on gets a zero
// constant of its type (PyTorch would give None, or zeros with materialize_grads=True).
//
// Throws GraphError when the loss is not a float scalar, a wrt is not a float value, or a VJP rule
// returns a gradient of the wrong type (a bug in that rule, named in the message).
std::vector<graph::Value> grad(graph::Graph& g, graph::Value loss, const std::vector<graph::Value>& wrt);

}  // namespace spire::autograd
