// The ONNX importer: an .onnx file -> a spire graph plus the weights its parameters hold.
//
// The model is read with ONNX's own protobuf classes (libonnx-dev), checked with ONNX's checker and run
// through ONNX's shape inference before any node is mapped. Each node maps onto graph ops through a table
// (one file per op family, see op_registry.h); an op outside the table is refused by name, node and opset.
// Initializers and Constant nodes become `parameter` leaves (their values go into `weights`) or scalar
// `constant` fills; integer values that feed shapes are folded on the host at import, so the graph that
// comes out has static shapes only. Symbolic dimensions are bound from the shapes the caller gives.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/tensor_file.h"
#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::onnx_import {

// Every import failure (unreadable or malformed file, checker failure, unsupported op, missing shape):
// the message names the file, and where there is one the node, its op type and the opset.
class ImportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ImportOptions {
  // Shapes of graph inputs by ONNX name; required for inputs with symbolic or unknown dimensions, checked
  // against the model's fixed dimensions otherwise.
  std::map<std::string, graph::Shape> input_shapes;
  // Values of inputs known at import (by ONNX name). Such an input stays a graph input, but where a value
  // must be known at import (Reshape's shape, Slice's starts, ...) the given value is used: this is how an
  // integer input that feeds a shape is specialised for one run.
  std::map<std::string, graph::Tensor> known_inputs;
  // When > 0: the first dimension of every input whose first dimension is symbolic, where input_shapes gives
  // none (how `spire compile` specialises a model exported with a dynamic batch to each batch it serves).
  int64_t batch = 0;
  // Added to the message when an input's shape is needed and not given (e.g. "it is missing from in.st").
  std::string missing_shape_hint;
  // Inputs (by ONNX name) imported as `state` leaves instead of `input` leaves: values that stay on the device
  // between steps, set and read by name like parameters (a decoder's key/value cache, which the caller then
  // updates with Graph::state_update). They are listed in ImportedModel::states, not in `inputs`.
  std::set<std::string> state_inputs;
  // The dtype the f32 state_inputs are stored in, where it is not f32: a decoder's key/value cache in half under a
  // half precision policy (so that a decode step reads half the bytes). The state leaf then has this dtype and is cast
  // to f32 where the model reads it; ImportedModel::states lists it with this dtype, and whoever updates the state
  // casts the new value to it.
  graph::DType f32_state_storage = graph::DType::F32;
  // Called after each initializer is read, with the bytes of initializers read so far and in all (as stored in the
  // model): a caller's progress bar over a decoder's gigabytes.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// One ONNX graph input or output: its ONNX name, the graph's name for it (ONNX names may hold characters
// the graph text form does not), and its dtype and (bound) shape, which are the model's.
struct IoBinding {
  std::string onnx_name;
  std::string graph_name;
  graph::DType dtype = graph::DType::F32;
  graph::Shape shape;
};

struct ImportedModel {
  graph::Graph graph;
  io::NamedTensors weights;          // one per parameter leaf, by the leaf's name
  std::vector<IoBinding> inputs;     // graph inputs (not initializers), in model order
  std::vector<IoBinding> states;     // the inputs ImportOptions::state_inputs made state leaves, in model order
  std::vector<IoBinding> outputs;    // in model order
  int64_t opset = 0;                 // of the default ("" / ai.onnx) domain
};

ImportedModel import_model(const std::filesystem::path& path, const ImportOptions& options = {});

// The ONNX input/output bindings as safetensors metadata (key "spire.onnx.io"), so that `spire run` on an
// imported .graph file reads and writes tensors under their ONNX names; and back.
std::map<std::string, std::string> bindings_metadata(const ImportedModel& m);
void read_bindings_metadata(const std::map<std::string, std::string>& metadata, std::vector<IoBinding>& inputs,
                            std::vector<IoBinding>& outputs);

// The ONNX element types spire maps (FLOAT, DOUBLE, INT32, INT64, BOOL); ImportError naming `what` else.
graph::DType dtype_of_onnx(int elem_type, const std::string& what);

}  // namespace spire::onnx_import
