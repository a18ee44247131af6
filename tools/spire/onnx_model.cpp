#include "tools/spire/onnx_model.h"

#include <algorithm>

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bundle/bundle_file.h"
#include "io/file_bytes.h"
#include "io/tensor_file.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/text_form.h"
#include "lowering/device_bytes.h"
#include "lowering/executable.h"
#include "tools/spire/weights_progress.h"

namespace spire::cli {

LoadedModel load_onnx(const std::string& path, const std::map<std::string, graph::Tensor>& given,
                      const std::string& given_source, bool known_scalars) {
  onnx_import::ImportOptions opt;
  opt.missing_shape_hint = fmt::format("it is missing from {}", given_source);
  for (const auto& [name, t] : given) {
    opt.input_shapes[name] = t.shape;
    // Short float vectors too: Resize's scales and roi, which models hold as initializers and the node tests feed.
    const bool small = t.dtype == graph::DType::Bool || t.rank() == 0 || (t.rank() == 1 && t.numel() <= 8);
    if (graph::is_int(t.dtype) || (known_scalars && small))
      opt.known_inputs[name] = t;
  }
  opt.progress = weights_progress("reading the weights");
  onnx_import::ImportedModel im = onnx_import::import_model(path, opt);
  LoadedModel m{std::move(im.graph), {}, std::move(im.inputs), std::move(im.outputs)};
  for (auto& [name, t] : im.weights) m.weights.emplace(name, std::move(t));
  return m;
}

LoadedModel load_graph_model(const std::string& path, const std::string& weights_path) {
  LoadedModel m;
  try {
    const auto bytes = io::read_file_bytes(path);
    m.graph = graph::parse(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  } catch (const graph::ParseError& e) {
    throw std::runtime_error(fmt::format("{}:{}:{}: {}", path, e.line(), e.column(), e.message()));
  }
  // The weights file also holds the ONNX names (metadata): read it when the graph needs weights or it exists.
  if (!m.graph.parameters().empty() || std::filesystem::exists(weights_path)) {
    const io::SafetensorsFile file = io::read_safetensors(weights_path);
    for (const auto& t : file.tensors) m.weights.emplace(t.name, io::to_graph_tensor(t, weights_path));
    onnx_import::read_bindings_metadata(file.metadata, m.inputs, m.outputs);
  }
  // A graph not made by `spire import`: its own names are the tensor names.
  if (m.inputs.empty() && m.outputs.empty()) {
    for (graph::Value v : m.graph.inputs()) {
      const auto& n = m.graph.node(v);
      m.inputs.push_back({n.name, n.name, n.type.dtype, n.type.shape});
    }
    for (const auto& o : m.graph.outputs()) {
      const auto t = m.graph.type(o.value);
      m.outputs.push_back({o.name, o.name, t.dtype, t.shape});
    }
  }
  return m;
}

LoadedModel load_bundle_model(const std::string& path) {
  const bundle::Bundle b = bundle::read_bundle(path);
  if (b.source_graph.empty())
    throw std::runtime_error(fmt::format("{}: this bundle holds no source graph (bundles hold one since format 7): "
                                         "compile it again with `spire compile`, or give the .onnx or .graph model",
                                         path));
  LoadedModel m;
  try {
    m.graph = graph::parse(b.source_graph);
  } catch (const graph::ParseError& e) {
    throw std::runtime_error(fmt::format("{}: its source graph does not parse: {}", path, e.what()));
  }
  for (graph::Value v : m.graph.parameters()) {
    const graph::Node& n = m.graph.node(v);
    auto w = std::find_if(b.weights.begin(), b.weights.end(), [&](const bundle::Weight& x) { return x.name == n.name; });
    if (w == b.weights.end())
      throw std::runtime_error(fmt::format("{}: the source graph's parameter '{}' has no weight in the bundle", path,
                                           n.name));
    const std::span<const uint8_t> bytes = w->data();
    m.weights.emplace(n.name, lowering::from_device_bytes(std::vector<uint8_t>(bytes.begin(), bytes.end()), w->type,
                                                          n.type));
  }
  auto bind = [&](const std::vector<bundle::TensorSpec>& specs, const std::vector<std::string>& graph_names,
                  bool outputs, std::vector<onnx_import::IoBinding>& out) {
    for (size_t i = 0; i < specs.size(); ++i) {
      const std::optional<graph::Value> v = outputs ? m.graph.find_output(graph_names[i]) : m.graph.find(graph_names[i]);
      if (!v)
        throw std::runtime_error(fmt::format("{}: the source graph has no {} '{}'", path, outputs ? "output" : "input",
                                             graph_names[i]));
      const graph::TensorType t = m.graph.type(*v);
      out.push_back({specs[i].name, graph_names[i], t.dtype, t.shape});
    }
  };
  bind(b.inputs, b.input_graph_names, false, m.inputs);
  bind(b.outputs, b.output_graph_names, true, m.outputs);
  return m;
}

std::string weights_path(const std::string& model_path, const std::string& weights) {
  if (!model_path.ends_with(".graph")) return {};
  if (!weights.empty()) return weights;
  return std::filesystem::path(model_path).replace_extension(".safetensors").string();
}

LoadedModel load_model(const std::string& path, const std::string& weights,
                       const std::map<std::string, graph::Tensor>& given, const std::string& given_source) {
  if (path.ends_with(".graph")) return load_graph_model(path, weights_path(path, weights));
  if (path.ends_with(".spire")) return load_bundle_model(path);
  return load_onnx(path, given, given_source);
}

std::map<std::string, graph::Tensor> input_feeds(const LoadedModel& m, const std::map<std::string, graph::Tensor>& given,
                                                 const std::string& given_source) {
  std::map<std::string, graph::Tensor> feeds = m.weights;
  for (const auto& in : m.inputs) {
    const std::string want = graph::TensorType{in.dtype, in.shape}.to_string();
    auto it = given.find(in.onnx_name);
    if (it == given.end())
      throw std::runtime_error(fmt::format("input '{}' ({}) is missing from {}", in.onnx_name, want, given_source));
    if (it->second.type().to_string() != want)
      throw std::runtime_error(fmt::format("input '{}' is {} in the model but {} in {}", in.onnx_name, want,
                                           it->second.type().to_string(), given_source));
    feeds[in.graph_name] = it->second;
  }
  return feeds;
}

std::map<std::string, graph::Tensor> run_reference(const LoadedModel& m, const std::map<std::string, graph::Tensor>& feeds) {
  auto results = graph::evaluate(m.graph, feeds, graph::DType::F64);
  std::map<std::string, graph::Tensor> out;
  for (const auto& o : m.outputs) out[o.onnx_name] = std::move(results.at(o.graph_name));
  return out;
}

std::map<std::string, graph::Tensor> run_on_device(const LoadedModel& m, const std::map<std::string, graph::Tensor>& feeds,
                                                   rt::Device& device, StepTiming* timing,
                                                   const lowering::CompileOptions& options,
                                                   lowering::MemoryReport* memory) {
  auto exe = lowering::compile(m.graph, device, options);
  if (const std::string note = exe->precision_note(); !note.empty()) fmt::print(stderr, "spire: note: {}\n", note);
  if (memory) *memory = exe->memory();
  for (const graph::Node& n : m.graph.nodes())
    if (n.op == graph::OpKind::Input || n.op == graph::OpKind::Parameter) exe->set(n.name, feeds.at(n.name));
  exe->step();
  if (timing) bench_step(*exe, device.info(), *timing);
  std::map<std::string, graph::Tensor> out;
  for (const auto& o : m.outputs) out[o.onnx_name] = exe->get(o.graph_name);
  return out;
}

}  // namespace spire::cli
