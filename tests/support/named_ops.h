// The tests' shorthand for ops that have no builder method of their own (graph.h): each is g.op(name, ...) on
// the op table's entry, with a negative axis counted from the end as the removed builder methods did. Found by
// argument-dependent lookup: softmax(g, x, 1) from any test's namespace.
#pragma once

#include <cstdint>

#include "ir/graph/graph.h"

namespace spire::graph {

inline int64_t test_axis(const Graph& g, Value x, int64_t axis) { return axis < 0 ? axis + g.type(x).rank() : axis; }

inline Value softmax(Graph& g, Value x, int64_t axis = -1) { return g.op("softmax", {x}, {{"axis", test_axis(g, x, axis)}}); }
inline Value log_softmax(Graph& g, Value x, int64_t axis = -1) {
  return g.op("log_softmax", {x}, {{"axis", test_axis(g, x, axis)}});
}
inline Value cross_entropy(Graph& g, Value logits, Value labels) { return g.op("cross_entropy", {logits, labels}); }
inline Value cross_entropy_grad(Graph& g, Value grad, Value logits, Value labels) {
  return g.op("cross_entropy_grad", {grad, logits, labels});
}

}  // namespace spire::graph
