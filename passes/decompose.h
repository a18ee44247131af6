// Pass 1, decompose: rewrites ops that are compositions of simpler ones, so later passes and kernel
// templates handle fewer ops. Today: mean -> sum, then a multiply by 1/count (a scalar constant the
// pointwise kernel folds in). sigmoid, silu and gelu stay whole: each is one pointwise kernel already.
//
// The result is a new graph with the same leaves, outputs and state updates under the same names; every
// node keeps its name (a decomposed node's name goes to the last op of its expansion).
#pragma once

#include "ir/graph/graph.h"

namespace spire::passes {

graph::Graph decompose(const graph::Graph& g);

}  // namespace spire::passes
