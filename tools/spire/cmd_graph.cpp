// spire graph print|eval|grad: read, run and differentiate graph text files.
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "autograd/grad.h"
#include "io/tensor_file.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/graph.h"
#include "ir/graph/text_form.h"
#include "dump/dump.h"
#include "lowering/executable.h"
#include "lowering/stats.h"
#include "runtime/device.h"
#include "tools/spire/precision_option.h"
#include "tools/spire/commands.h"
#include "tools/spire/passes_option.h"
#include "tools/spire/step_bench.h"

namespace spire::cli {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw std::runtime_error(fmt::format("{}: read error", path));
  return s.str();
}

// "-" writes to standard output.
void write_text(const std::string& path, const std::string& text) {
  if (path == "-") {
    fmt::print("{}", text);
    return;
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  out << text;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("{}: write error", path));
}

// Parses a graph file; syntax errors come back as "FILE:LINE:COLUMN: message", the form editors jump to.
graph::Graph load_graph(const std::string& path) {
  const std::string text = read_text(path);
  try {
    return graph::parse(text);
  } catch (const graph::ParseError& e) {
    throw std::runtime_error(fmt::format("{}:{}:{}: {}", path, e.line(), e.column(), e.message()));
  } catch (const graph::GraphError& e) {
    throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
  }
}

const char* leaf_kind(graph::OpKind op) {
  switch (op) {
    case graph::OpKind::Input: return "input";
    case graph::OpKind::Parameter: return "parameter";
    case graph::OpKind::State: return "state";
    default: return "leaf";
  }
}

// ---- spire graph print

void run_print(const std::string& file) { fmt::print("{}", graph::print(load_graph(file))); }

// ---- spire graph eval

struct EvalOptions {
  std::string file;
  std::string inputs;
  std::string outputs;
  std::string dtype;  // empty: compute in f64, write each output in its graph dtype
  std::string device; // empty: the reference evaluator; else compile for that device (lowering/) and run there
  std::string dump;   // with device: write every compilation stage here (dump/dump.h)
  bool stats = false; // print flops and bytes per op kind (lowering/stats.h)
  std::string passes; // --passes: built-in rewrite passes (passes_option.h)
  int bench = 0;      // with device: replay the step N more times and print its median device time
  bool profile = false;  // with device: print every launch's device time
  Precision precision = Precision::Fp32;  // with device: CompileOptions::precision
  tuning::TuningFlags tuning;
};

// "x f32[3]" for messages; a dtype the graph IR lacks shows as the format's own ("pixels u8[2]").
std::string describe(const io::StTensor& t) {
  std::string dtype(io::st_dtype_name(t.dtype));
  for (char& c : dtype) c = char(std::tolower(static_cast<unsigned char>(c)));
  return fmt::format("{} {}{}", t.name, dtype, graph::shape_to_string(t.shape));
}

// Every Input, Parameter and State leaf of g, taken by name from the file and checked against its
// declaration, so that the user hears about a wrong file before any arithmetic runs. Only the tensors the
// graph needs are converted: extra ones are ignored whatever their dtype.
std::map<std::string, graph::Tensor> gather_leaves(const graph::Graph& g, const std::string& path) {
  const io::SafetensorsFile file = io::read_safetensors(path);
  std::map<std::string, graph::Tensor> feeds;
  for (const graph::Node& n : g.nodes()) {
    if (n.op != graph::OpKind::Input && n.op != graph::OpKind::Parameter && n.op != graph::OpKind::State) continue;
    const io::StTensor* st = file.find(n.name);
    if (st == nullptr) {
      std::vector<std::string> names;
      for (const auto& t : file.tensors) names.push_back(describe(t));
      throw std::runtime_error(fmt::format("{} has no tensor '{}' (the graph's {} of type {}); it has: {}", path,
                                           n.name, leaf_kind(n.op), n.type.to_string(),
                                           names.empty() ? "no tensors" : fmt::format("{}", fmt::join(names, ", "))));
    }
    const std::string have = describe(*st).substr(st->name.size() + 1);
    if (have != n.type.to_string()) {
      throw std::runtime_error(fmt::format("{} '{}' is {} in the graph but {} in {}", leaf_kind(n.op), n.name,
                                           n.type.to_string(), have, path));
    }
    feeds.emplace(n.name, io::to_graph_tensor(*st, path));
  }
  return feeds;
}

void run_eval(const EvalOptions& o) {
  const passes::PassPipeline pipeline = passes_pipeline(o.passes);
  if (!pipeline.empty(passes::PassPoint::BeforeFusion) && o.device.empty())
    throw std::runtime_error("--passes: before_fusion passes run inside lowering, for a device: add --device");
  const graph::Graph parsed = load_graph(o.file);
  const graph::Graph g = pipeline.run(passes::PassPoint::AfterImport, parsed);
  const auto feeds = gather_leaves(g, o.inputs);
  std::optional<graph::DType> requested;
  if (!o.dtype.empty()) requested = graph::dtype_from_name(o.dtype);

  // The reference evaluator on the CPU, or with --device one step of the compiled graph on that device
  // (parameters and states read back after the step hold the state updates' new values, as evaluate() reports).
  if (o.stats) fmt::print("{}", lowering::stats_text(lowering::graph_stats(g, &pipeline)));
  std::map<std::string, graph::Tensor> results;
  if (o.device.empty()) {
    results = graph::evaluate(g, feeds, requested.value_or(graph::DType::F64));
  } else {
    auto dev = rt::open_device(o.device);
    tuning::TuningFlags flags = o.tuning;
    flags.precision = o.precision;
    const lowering::MapTuningChoices choices = tuning::prepare_tuning(flags, *dev, {&g}, stdout);
    if (!o.dump.empty())
      fmt::print("{}", dump::dump_summary(
                           dump::dump_pipeline(o.dump, parsed, nullptr,
                                                   {.target = dev->info(),
                                                    .passes = &pipeline,
                                                    .tuning = &choices,
                                                    .precision = o.precision}),
                           o.dump));
    auto exe = lowering::compile(g, *dev,
                                 {.passes = &pipeline, .tuning = &choices, .profile = o.profile, .precision = o.precision});
    if (const std::string note = exe->precision_note(); !note.empty()) fmt::print(stderr, "spire: note: {}\n", note);
    for (const auto& [name, t] : feeds) exe->set(name, t);
    exe->step();
    // The results are the first step's: timing replays it, and a graph with state updates changes its state.
    for (const auto& out : g.outputs()) results[out.name] = exe->get(out.name);
    for (const auto& u : g.state_updates()) results[g.node(u.target).name] = exe->get(g.node(u.target).name);
    StepTiming timing;
    timing.runs = o.bench;
    timing.profile = o.profile;
    bench_step(*exe, dev->info(), timing);
    if (o.profile) fmt::print("{}", profile_table(dev->info().id, timing));
    if (o.bench > 0) fmt::print("{}", bench_table({{dev->info().id, timing}}));
  }

  // Outputs in the graph's order, then the state updates' new values under their targets' names.
  io::NamedTensors written;
  auto add = [&](const std::string& name) {
    graph::Tensor t = std::move(results.at(name));
    if (requested && graph::is_float(t.dtype)) {
      t.dtype = *requested;
      t.round_to_dtype();
    }
    written.emplace_back(name, std::move(t));
  };
  for (const auto& out : g.outputs()) add(out.name);
  for (const auto& u : g.state_updates()) add(g.node(u.target).name);
  io::save_tensors(o.outputs, written);
}

// ---- spire graph grad

struct GradOptions {
  std::string file;
  std::string loss;
  std::vector<std::string> wrt;
  bool parameters = false;
  std::string output;
  std::string passes;  // --passes: built-in rewrite passes (passes_option.h)
};

graph::Value resolve(const graph::Graph& g, const std::string& name, const std::string& what) {
  if (auto v = g.find_output(name)) return *v;
  if (auto v = g.find(name)) return *v;
  throw std::runtime_error(fmt::format("{} '{}' is neither an output nor a value of the graph", what, name));
}

void run_grad(const GradOptions& o) {
  const passes::PassPipeline pipeline = passes_pipeline(o.passes);
  graph::Graph g = pipeline.run(passes::PassPoint::AfterImport, load_graph(o.file));
  const graph::Value loss = resolve(g, o.loss, "--loss");
  std::vector<graph::Value> wrt;
  std::vector<std::string> names = o.wrt;
  if (o.parameters)  // every float parameter: what training an imported model updates
    for (graph::Value p : g.parameters())
      if (graph::is_float(g.type(p).dtype)) names.push_back(g.node(p).name);
  for (const auto& name : names) wrt.push_back(resolve(g, name, "--wrt"));
  const auto grads = autograd::grad(g, loss, wrt);
  for (size_t i = 0; i < wrt.size(); ++i) g.output("grad." + names[i], grads[i]);
  write_text(o.output, graph::print(pipeline.run(passes::PassPoint::AfterAutograd, std::move(g))));
}

}  // namespace

void register_graph_commands(CLI::App& app) {
  auto* group = app.add_subcommand("graph", "Print, evaluate or differentiate a graph text file");
  group->require_subcommand(1);

  {
    auto file = std::make_shared<std::string>();
    auto* cmd = group->add_subcommand(
        "print", "Parse a graph file and print its canonical text form (a syntax error reports FILE:LINE:COLUMN)");
    cmd->add_option("file", *file, "Graph text file")->required();
    add_ops_option(cmd);
    cmd->callback([file] { run_print(*file); });
  }
  {
    auto o = std::make_shared<EvalOptions>();
    auto* cmd = group->add_subcommand(
        "eval",
        "Run a graph on the CPU with the reference evaluator (or, with --device, compiled on a device). Every "
        "input, parameter and state of the graph is read by name from --inputs (dtype and shape must match the graph exactly; extra tensors are ignored). "
        "Every graph output, and the new value of every state update (under its target's name), is written to "
        "--outputs.");
    cmd->add_option("file", o->file, "Graph text file")->required();
    cmd->add_option("--inputs", o->inputs, "safetensors file holding the graph's inputs, parameters and states")
        ->required();
    cmd->add_option("--outputs", o->outputs, "safetensors file to write the results to")->required();
    cmd->add_option("--dtype", o->dtype,
                    "Precision: f64 computes every float op in double, f32 rounds every float op's result to "
                    "float; float results are written in that precision. Default: compute in f64 and write each "
                    "result in its graph dtype")
        ->check(CLI::IsMember({"f32", "f64"}));
    cmd->add_option("--device", o->device,
                    "Run the compiled graph on this device (vulkan:N, cuda:N, or 'default' for the best present) "
                    "instead of the reference evaluator; results are computed in the graph's own dtypes")
        ->excludes("--dtype");
    add_dump_option(cmd, o->dump, "graph", "; needs --device")->needs("--device");
    cmd->add_flag("--stats", o->stats,
                  "Print the flops (a multiply-add is 2) and minimum bytes moved per op kind and in total");
    add_ops_option(cmd);
    add_passes_option(cmd, o->passes, {passes::PassPoint::AfterImport, passes::PassPoint::BeforeFusion},
                      "after_import (default: the parsed graph, what the reference evaluator and the device both "
                      "run), before_fusion (inside lowering, after decompose; needs --device)");
    cmd->add_option("--bench", o->bench,
                    "With --device: after the step whose results are written, replay it N more times after a warm-up "
                    "and print the median and minimum device time (the device's own timestamps)")
        ->check(CLI::PositiveNumber)
        ->needs("--device");
    cmd->add_flag("--profile", o->profile,
                  "With --device: also print every launch of the step (node, kernel) with its median device time "
                  "over the --bench runs (or one run), from a device timestamp after each launch; launches that "
                  "read only parameters the graph never updates run in the first step only and are not listed")
        ->needs("--device");
    add_precision_option(cmd, o->precision)->needs("--device");
    tuning::TuningFlags& flags = o->tuning;
    add_tuning_options(cmd, flags);
    cmd->get_option("--tune")->needs("--device");
    cmd->callback([o] { run_eval(*o); });
  }
  {
    auto o = std::make_shared<GradOptions>();
    auto* cmd = group->add_subcommand(
        "grad",
        "Append the backward graph of a scalar loss and output grad.<name> for each --wrt value, or for every "
        "float parameter with --parameters (a value the loss does not depend on gets zeros)");
    cmd->add_option("file", o->file, "Graph text file")->required();
    cmd->add_option("--loss", o->loss, "The loss: an output name or a value name (a float scalar)")->required();
    auto* wrt = cmd->add_option_group("--wrt or --parameters", "What to differentiate with respect to");
    wrt->add_option("--wrt", o->wrt, "Values to differentiate with respect to, comma-separated (e.g. w,b)")
        ->delimiter(',');
    wrt->add_flag("--parameters", o->parameters, "Every float parameter of the graph (e.g. an imported model's weights)");
    wrt->require_option(1, 2);
    cmd->add_option("-o,--output", o->output, "Graph file to write the joint forward+backward graph to ('-': stdout)")
        ->required();
    add_ops_option(cmd);
    add_passes_option(cmd, o->passes, {passes::PassPoint::AfterImport, passes::PassPoint::AfterAutograd},
                      "after_import (default: the parsed graph, before autograd, which then differentiates the "
                      "rewritten ops), after_autograd (the joint graph written by -o)");
    cmd->callback([o] { run_grad(*o); });
  }
}

}  // namespace spire::cli
