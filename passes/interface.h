// What a pass must leave alone: the graph's interface to the code around it. The executor feeds inputs,
// parameters and states by name, reads outputs by name in order, and writes state updates back by target
// name; a pass that changed any of these would break its caller without making the graph itself invalid.
#pragma once

#include <string>

#include "ir/graph/graph.h"

namespace spire::passes {

// "" when `after` has the same interface as `before`:
//   * the same input, parameter and state leaves (by name), each with the same type (and a state the same init);
//   * the same outputs, by name, in the same order, each of the same type;
//   * state updates of the same targets, by name.
// Otherwise one line naming the first difference, e.g. "output 'loss' is f32[2] (was f32[])".
std::string interface_change(const graph::Graph& before, const graph::Graph& after);

}  // namespace spire::passes
