// Helpers for running a training graph step after step on the host: the persistent values (parameters and
// optimizer states) live in one name -> Tensor map that is fed to evaluate() and updated from its results.
#pragma once

#include <map>
#include <string>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::graph {

// A tensor for every State leaf of `g`, filled with its `init` attribute (what an executor does before the
// first step). Parameters are not included: they come from a checkpoint or an initializer.
std::map<std::string, Tensor> initial_states(const Graph& g);

// Copies the new value of every state update from `results` (evaluate()'s map, where each update is keyed
// by its target's name) into `persistent`, ready for the next step. Throws GraphError if one is missing.
void write_back_state_updates(const Graph& g, const std::map<std::string, Tensor>& results,
                              std::map<std::string, Tensor>& persistent);

}  // namespace spire::graph
