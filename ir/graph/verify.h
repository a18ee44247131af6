// The graph verifier: checks every invariant the builder promises, on a finished graph.
//
// A graph built through Graph's methods is valid by construction. The verifier exists for code that
// rebuilds graphs wholesale (rewrite passes, importers, anything that copies nodes around), so that a broken
// invariant is reported where it was broken, by name, instead of surfacing later as a wrong kernel or a
// crash in lowering. Rewrite pipelines (passes/pipeline.h) run it after every pass in debug builds and in
// the tests.
//
// What it checks, in this order, stopping at the first problem:
//   * every node's op is in the op table and it has as many inputs as the op takes (leaves none);
//   * topological order: every input is a value defined before its user;
//   * the node's attributes are exactly its op entry's, in the entry's order, each of the entry's kind;
//   * names: non-empty identifiers (the text form's NAME), unique, and found by Graph::find;
//   * types: a leaf's dimensions are >= 0; any other node's type is what its op's shape rule gives for its
//     inputs' types and its attributes;
//   * outputs: valid names, unique, naming values of the graph, none named like a state-update target;
//   * state updates: the target is a parameter or state, updated once, and the new value has its type.
#pragma once

#include <string>

#include "ir/graph/graph.h"

namespace spire::graph {

// "" when `g` is valid; otherwise one line naming the first problem and the node (or output, or update)
// it is in, e.g. "node 4 'y' (add): type f32[3] differs from its shape rule's f32[2,3]".
std::string verify(const Graph& g);

// Throws GraphError("<context>: <problem>") when verify(g) finds one.
void verify_or_throw(const Graph& g, std::string_view context);

}  // namespace spire::graph
