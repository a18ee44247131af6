// What `spire run`, `spire import` and `spire onnx-test` share: a model loaded from an .onnx file (through
// the importer) or from an imported .graph file plus its weights, run on a named device or the reference
// evaluator, with inputs and outputs under the model's ONNX names.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_import.h"
#include "io/safetensors.h"
#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"
#include "lowering/executable.h"
#include "runtime/device.h"
#include "tools/spire/step_bench.h"

namespace spire::cli {

struct LoadedModel {
  graph::Graph graph;
  std::map<std::string, graph::Tensor> weights;      // by parameter name
  std::vector<onnx_import::IoBinding> inputs, outputs;
};

// Reads an .onnx model, binding symbolic dims from `given` (tensors by ONNX name). Integer tensors (and, with
// `known_scalars`, bool, rank-0 and 1-D tensors of at most 8 elements too) are also known values at import, where
// one is needed as a constant (how an integer input that feeds a shape becomes static). `given_source` names where
// they come from in messages.
LoadedModel load_onnx(const std::string& path, const std::map<std::string, graph::Tensor>& given,
                      const std::string& given_source, bool known_scalars = false);
// Reads an imported .graph file and its weights (their metadata holds the ONNX names, when present).
LoadedModel load_graph_model(const std::string& path, const std::string& weights_path);

// A bundle's source graph (format 7 and later: bundle.h's source_graph) with its weights, at the bundle's largest
// batch; an older bundle is refused, naming the spire compile that gives one.
LoadedModel load_bundle_model(const std::string& path);

// An .onnx model (load_onnx), an imported .graph file (load_graph_model) or a bundle (load_bundle_model) by the
// file's extension, a .graph's weights from `weights` or, when empty, from the file beside it (MODEL.safetensors).
LoadedModel load_model(const std::string& path, const std::string& weights,
                       const std::map<std::string, graph::Tensor>& given, const std::string& given_source);
// The weights file load_model reads for a .graph model (empty for others).
std::string weights_path(const std::string& model_path, const std::string& weights);

// The feeds of every graph input, taken from `given` by ONNX name and checked (missing, dtype, shape).
std::map<std::string, graph::Tensor> input_feeds(const LoadedModel& m, const std::map<std::string, graph::Tensor>& given,
                                                 const std::string& given_source);

// Runs the model on "reference" (the float64 evaluator) or on an open device; results by ONNX output name,
// in the model's dtypes.
std::map<std::string, graph::Tensor> run_reference(const LoadedModel& m, const std::map<std::string, graph::Tensor>& feeds);
// With `timing`, the recorded step is also replayed after a warm-up and timed (step_bench.h); `options` are
// compile()'s (the tuning choices; profile must be set for timing->profile).
std::map<std::string, graph::Tensor> run_on_device(const LoadedModel& m, const std::map<std::string, graph::Tensor>& feeds,
                                                   rt::Device& device, StepTiming* timing = nullptr,
                                                   const lowering::CompileOptions& options = {},
                                                   lowering::MemoryReport* memory = nullptr);

}  // namespace spire::cli
