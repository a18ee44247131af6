// The reference evaluator: runs a graph on the CPU, the oracle every backend is compared against.
//
// Agreed interface between ir/graph (graph.h, tensor.h: the graph engineer) and the evaluator's
// implementation (evaluator.cpp, eval_*.cpp: the evaluator engineer). The semantics of every op are those
// documented in graph.h's OpKind list and op_table.h.
#pragma once

#include <map>
#include <string>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::graph {

// Evaluates `g`.
//
// `inputs` maps node names to tensors for every Input, Parameter and State leaf of the graph (constants
// come from their fill value). Each tensor's shape must equal the leaf's declared shape and its dtype the
// leaf's dtype; a missing or mismatching one throws GraphError naming the leaf. Extra entries are ignored.
//
// `compute` is the precision arithmetic runs in: F64 computes every float op in double (the oracle);
// F32 rounds the result of every float op to float, the way a float32 device computes (accumulations
// inside one op, e.g. matmul or sum, may still run in double). Integer and bool values are exact either way.
//
// Returns, by name:
//   - every graph output (g.outputs()) under its output name;
//   - for every state update (g.state_updates()), the new value under the TARGET's node name
//     (e.g. "convnet.0.weight" -> the updated weight). Graph::output refuses an output name equal to a
//     state-update target's name and Graph::state_update refuses a target whose name is an output's name,
//     so these keys never collide.
// Result tensors have the value's dtype, with values rounded to it (round_to_dtype()).
std::map<std::string, Tensor> evaluate(const Graph& g, const std::map<std::string, Tensor>& inputs,
                                       DType compute = DType::F64);

}  // namespace spire::graph
