// Pass 1, decompose: rewrites ops that are compositions of simpler ones, so later passes and kernel
// templates handle fewer ops. Today: mean -> sum, then a multiply by 1/count (a scalar constant the
// pointwise kernel folds in). sigmoid, silu and gelu stay whole: each is one pointwise kernel already.
//
// The result is a new graph with the same leaves, outputs and state updates under the same names; every
// node keeps its name (a decomposed node's name goes to the last op of its expansion).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph/graph.h"

namespace spire::lowering {

graph::Graph decompose(const graph::Graph& g);

// A node name used by neither graph: `base`, else base_1, base_2, ... (for nodes a rewrite adds).
std::string fresh_name(const graph::Graph& original, const graph::Graph& out, const std::string& base);

// The skeleton of the rewrite passes: a new graph with g's leaves, each other node of g (in order) as `copy` adds it
// to `out` (`inputs` are the node's inputs already in `out`, `map` takes any earlier value of g there), then g's
// outputs and state updates under the same names.
using NodeCopy = std::function<graph::Value(graph::Graph& out, graph::Value v, std::vector<graph::Value> inputs,
                                            const std::vector<graph::Value>& map)>;
graph::Graph rebuild(const graph::Graph& g, const NodeCopy& copy);

}  // namespace spire::lowering
