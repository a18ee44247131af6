// The skeleton every graph-to-graph pass here is written on: copy a graph node by node, letting the pass replace a node
// by what it expands to, and name the nodes a rewrite adds.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph/graph.h"

namespace spire::passes {

// A node name used by neither graph: `base`, else base_1, base_2, ... (for nodes a rewrite adds).
std::string fresh_name(const graph::Graph& original, const graph::Graph& out, const std::string& base);

// A new graph with g's leaves (each as `copy_leaf` adds it to `out`, where given: a pass that replaces a parameter by
// what computes it), each other node of g (in order) as `copy` adds it to `out` (`inputs` are the node's inputs
// already in `out`, `map` takes any earlier value of g there), then g's outputs and state updates under the same names.
using NodeCopy = std::function<graph::Value(graph::Graph& out, graph::Value v, std::vector<graph::Value> inputs,
                                            const std::vector<graph::Value>& map)>;
using LeafCopy = std::function<graph::Value(graph::Graph& out, graph::Value leaf)>;
graph::Graph rebuild(const graph::Graph& g, const NodeCopy& copy, const LeafCopy& copy_leaf = nullptr);

}  // namespace spire::passes
