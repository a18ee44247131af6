// A piece of a graph cut out to run on its own: `spire reduce`'s candidates. The cut keeps some of the graph's
// nodes; every value they read from outside the cut becomes an input of the cut, fed with the float64 reference's
// value (rounded to the value's dtype, as capture_reference keeps it), so the cut sees exactly what a right device
// would have given it. The graph's own leaves stay what they are (inputs, parameters, constants) and keep their
// feeds. Every value of the cut that no other node of the cut reads is an output, under its node name.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "diff/capture.h"
#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::diff {

struct Cut {
  graph::Graph graph;
  std::map<std::string, graph::Tensor> feeds;  // every input and parameter of `graph`, by node name
  std::vector<std::string> boundary;           // the cut's inputs that were computed values in the whole graph
};

// `nodes`: non-leaf values of `g` (any order; duplicates ignored). `feeds`: the graph's leaves by node name;
// `reference`: capture_reference(g, feeds), for the boundary values.
Cut cut_graph(const graph::Graph& g, const std::vector<graph::Value>& nodes,
              const std::map<std::string, graph::Tensor>& feeds, const Capture& reference);

// Where save_cut writes a cut: MODEL.graph, its weights MODEL.safetensors (where `spire diff` and `spire run` look for
// a .graph model's parameters) and its inputs MODEL.inputs.safetensors (its graph inputs, boundary values included).
struct CutFiles {
  std::filesystem::path graph, weights, inputs;
  static CutFiles beside(const std::filesystem::path& graph_file);
};

// Writes the cut as graph text with its weights (every parameter; an empty file where there is none, so no older
// file is taken for them) and its inputs, each file atomically (a temporary file renamed), the graph last: a graph
// file there means the other two are whole. `spire diff FILES.graph --inputs FILES.inputs` runs it.
void save_cut(const Cut& cut, const CutFiles& files);

// The non-leaf values among `v` and the values it is computed from (its ancestors), in topological order.
std::vector<graph::Value> ancestors_and_self(const graph::Graph& g, graph::Value v);

}  // namespace spire::diff
