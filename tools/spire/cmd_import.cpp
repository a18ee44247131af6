// spire import MODEL.onnx -o MODEL.graph: the imported graph as text, its weights beside it.
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "frontend/onnx/onnx_import.h"
#include "io/tensor_file.h"
#include "ir/graph/text_form.h"
#include "tools/spire/commands.h"
#include "tools/spire/weights_progress.h"

namespace spire::cli {
namespace {

struct ImportCmd {
  std::string model, output, weights;
  std::vector<std::string> shapes;
};

// "name=1,3,224,224" (the name may itself hold '='; the last one splits).
std::pair<std::string, graph::Shape> parse_shape_arg(const std::string& s) {
  const auto eq = s.rfind('=');
  if (eq == std::string::npos || eq == 0) throw std::runtime_error(fmt::format("--input-shape '{}': expected NAME=D0,D1,...", s));
  graph::Shape shape;
  std::string rest = s.substr(eq + 1);
  size_t pos = 0;
  while (!rest.empty() && pos <= rest.size()) {
    const size_t comma = rest.find(',', pos);
    const std::string tok = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (tok.empty() || tok.size() > 12 || tok.find_first_not_of("0123456789") != std::string::npos)
      throw std::runtime_error(fmt::format("--input-shape '{}': '{}' is not a dimension", s, tok));
    shape.push_back(std::stoll(tok));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return {s.substr(0, eq), shape};
}

void run_import(const ImportCmd& o) {
  onnx_import::ImportOptions opt;
  for (const auto& s : o.shapes) opt.input_shapes.insert(parse_shape_arg(s));
  opt.progress = weights_progress("reading the weights");
  const auto m = onnx_import::import_model(o.model, opt);
  const std::string weights =
      o.weights.empty() ? std::filesystem::path(o.output).replace_extension(".safetensors").string() : o.weights;
  io::save_tensors(weights, m.weights, onnx_import::bindings_metadata(m));
  std::ofstream out(o.output, std::ios::binary);
  if (!out) throw std::runtime_error(fmt::format("{}: cannot create", o.output));
  out << graph::print(m.graph);
  out.close();
  if (!out) throw std::runtime_error(fmt::format("{}: write error", o.output));
  fmt::print("{}: {} nodes, {} weights ({}), opset {}\n", o.output, m.graph.size(), m.weights.size(), weights, m.opset);
}

}  // namespace

void register_import_commands(CLI::App& app) {
  auto o = std::make_shared<ImportCmd>();
  auto* cmd = app.add_subcommand(
      "import", "Import an ONNX model: write the graph as text and its weights (initializers) as safetensors");
  cmd->add_option("model", o->model, "The .onnx file")->required();
  cmd->add_option("-o,--output", o->output, "Graph text file to write")->required();
  cmd->add_option("--weights", o->weights, "safetensors file for the weights (default: the output with .safetensors)");
  cmd->add_option("--input-shape", o->shapes,
                  "Shape of an input with symbolic dimensions, NAME=D0,D1,... (repeatable)");
  cmd->callback([o] { run_import(*o); });
}

}  // namespace spire::cli
