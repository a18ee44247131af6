// Pass 2, schedule: the order nodes run in. The graph is already topological (a node's inputs precede
// it); scheduling keeps that order and drops every node that no output and no state update needs.
#pragma once

#include <vector>

#include "ir/graph/graph.h"

namespace spire::lowering {

// Needed non-leaf nodes, inputs before users.
std::vector<graph::Value> schedule(const graph::Graph& g);

}  // namespace spire::lowering
