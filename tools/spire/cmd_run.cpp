// spire run MODEL.onnx|MODEL.graph --inputs IN --outputs OUT [--device D]: one inference, tensors by their
// ONNX names. --device all runs every device present and prints each one's distance from the reference.
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "io/tensor_file.h"
#include "dump/dump.h"
#include "lowering/stats.h"
#include "tools/spire/commands.h"
#include "tools/spire/onnx_model.h"
#include "tools/spire/passes_option.h"
#include "tools/spire/precision_option.h"
#include "tools/spire/run_bundle.h"

namespace spire::cli {
namespace {

struct RunCmd {
  std::string model, inputs, outputs, device, weights;
  int bench = 0;
  std::string dump;    // write every compilation stage here (dump/dump.h)
  bool stats = false;  // print flops and bytes per op kind (lowering/stats.h)
  std::string passes;  // --passes: built-in rewrite passes (passes_option.h)
  bool profile = false;  // print every launch's device time
  bool profile_startup = false;  // --profile-startup: where the time to the first result went (bundles)
  bool rerun_weight_launches = false;  // --rerun-weight-launches: CompileOptions::parameters_once off
  std::string memory_budget;           // --memory-budget: CompileOptions::memory_budget, "" for none
  Precision precision = Precision::Fp32;  // --precision: CompileOptions::precision
  tuning::TuningFlags tuning;
};

// "250000000", "250M", "2G", "64k": bytes (k, M, G are powers of 1000, as the memory lines of --stats print MB).
uint64_t parse_bytes(const std::string& text) {
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  const std::string suffix = text.substr(used);
  const double scale = suffix.empty() ? 1 : suffix == "k" || suffix == "K" ? 1e3 : suffix == "M" ? 1e6
                       : suffix == "G" ? 1e9 : -1;
  if (value <= 0 || scale < 0)
    throw std::invalid_argument(fmt::format("--memory-budget {}: give a positive number of bytes, optionally with k, "
                                            "M or G (powers of 1000), e.g. 250M", text));
  return uint64_t(value * scale);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Diff {
  double abs = 0, rel = 0;
};
// Max-norm of the difference, absolute and relative to the reference's max-norm.
Diff max_diff(const graph::Tensor& a, const graph::Tensor& ref) {
  Diff d;
  double norm = 0;
  for (size_t i = 0; i < ref.data.size() && i < a.data.size(); ++i) {
    const double e = std::fabs(a.data[i] - ref.data[i]);
    d.abs = std::isnan(e) ? INFINITY : std::max(d.abs, e);
    norm = std::max(norm, std::fabs(ref.data[i]));
  }
  d.rel = norm > 0 ? d.abs / norm : d.abs;
  return d;
}

void run_run(const RunCmd& o) {
  if (ends_with(o.model, ".spire")) {
    if (!o.dump.empty() || o.stats || !o.passes.empty() || o.profile || o.tuning.tune || o.rerun_weight_launches ||
        !o.memory_budget.empty() || o.precision != Precision::Fp32)
      throw std::invalid_argument("a bundle is already compiled: --dump, --stats, --passes, --profile, --tune, "
                                  "--rerun-weight-launches, --memory-budget and --precision apply to .onnx and .graph "
                                  "models (give spire compile --rerun-weight-launches or --precision)");
    run_bundle(o.model, o.inputs, o.outputs, o.device, o.bench, o.profile_startup);
    return;
  }
  if (o.profile_startup)
    throw std::invalid_argument("--profile-startup times a bundle's start (MODEL.spire from `spire compile`); an .onnx "
                                "or .graph model is compiled first, which is not a start-up");
  const auto given = io::load_tensors(o.inputs);
  LoadedModel m = load_model(o.model, o.weights, given, o.inputs);
  const passes::PassPipeline pipeline = passes_pipeline(o.passes);
  if (!pipeline.empty(passes::PassPoint::BeforeFusion) && o.device == "reference")
    throw std::runtime_error("--passes: before_fusion passes run inside lowering, for a device, not on the reference");
  // The imported graph as it was, for the dump, which runs the passes itself and shows each one's result.
  const graph::Graph imported = o.dump.empty() || pipeline.empty(passes::PassPoint::AfterImport) ? graph::Graph{} : m.graph;
  m.graph = pipeline.run(passes::PassPoint::AfterImport, std::move(m.graph));
  const auto feeds = input_feeds(m, given, o.inputs);
  if (o.stats) fmt::print("{}", lowering::stats_text(lowering::graph_stats(m.graph, &pipeline)));
  std::map<std::string, graph::Tensor> results;
  std::vector<std::pair<std::string, StepTiming>> times;
  // The plan depends on the device's limits and tuning: one dump per device, in DIR/<device> when there are
  // several.
  auto dump_for = [&](const rt::DeviceInfo& info, const lowering::TuningChoices& choices, bool several) {
    if (o.dump.empty()) return;
    std::filesystem::path dir = o.dump;
    if (several) dir /= std::string(info.id).replace(info.id.find(':'), 1, "_");
    const graph::Graph& built = pipeline.empty(passes::PassPoint::AfterImport) ? m.graph : imported;
    fmt::print("{}", dump::dump_summary(dump::dump_pipeline(dir, built, nullptr,
                                                                    {.target = info,
                                                                     .passes = &pipeline,
                                                                     .tuning = &choices,
                                                                     .parameters_once = !o.rerun_weight_launches,
                                                                     .precision = o.precision}),
                                            dir));
  };
  // Tuning (when asked), then the run with the cache's choices for the device, timed and profiled as asked.
  auto run_device = [&](rt::Device& dev, bool several) {
    tuning::TuningFlags flags = o.tuning;
    flags.precision = o.precision;
    const lowering::MapTuningChoices choices = tuning::prepare_tuning(flags, dev, {&m.graph}, stdout);
    dump_for(dev.info(), choices, several);
    StepTiming timing;
    timing.runs = o.bench;
    timing.profile = o.profile;
    lowering::MemoryReport memory;
    auto r = run_on_device(m, feeds, dev, &timing,
                           {.passes = &pipeline,
                            .tuning = &choices,
                            .profile = o.profile,
                            .parameters_once = !o.rerun_weight_launches,
                            .memory_budget = o.memory_budget.empty() ? 0 : parse_bytes(o.memory_budget),
                            .precision = o.precision},
                           o.stats ? &memory : nullptr);
    if (o.stats) fmt::print("{}", lowering::memory_text(memory, dev.info().id));
    if (o.bench > 0 || o.profile) times.push_back({dev.info().id, timing});
    return r;
  };

  if (o.device == "reference") {
    if (o.bench > 0 || o.profile)
      throw std::runtime_error("--bench and --profile time a device; the reference evaluator is not timed");
    if (o.tuning.tune) throw std::runtime_error("--tune times kernels on a device; the reference evaluator runs none");
    if (!o.dump.empty()) throw std::runtime_error("--dump shows what is compiled for a device; the reference evaluator compiles nothing");
    results = run_reference(m, feeds);
  } else if (o.device == "all") {
    const auto ref = run_reference(m, feeds);
    fmt::print("{:<24} {:<12} {:>14} {:>14}\n", "output", "device", "max abs diff", "max rel diff");
    bool first = true;
    for (const auto& info : rt::list_devices()) {
      auto dev = rt::open_device(info.id);
      auto r = run_device(*dev, true);
      for (const auto& out : m.outputs) {
        const Diff d = max_diff(r.at(out.onnx_name), ref.at(out.onnx_name));
        fmt::print("{:<24} {:<12} {:>14.3e} {:>14.3e}\n", out.onnx_name, info.id, d.abs, d.rel);
      }
      if (first) results = std::move(r);
      first = false;
    }
    if (first) results = ref;  // no device at all: the reference is what there is
  } else {
    auto dev = rt::open_device(o.device);
    results = run_device(*dev, false);
  }
  if (o.profile)
    for (const auto& [id, t] : times) fmt::print("{}", profile_table(id, t));
  if (o.bench > 0) fmt::print("{}", bench_table(times));
  io::NamedTensors written;
  for (const auto& out : m.outputs) written.emplace_back(out.onnx_name, results.at(out.onnx_name));
  io::save_tensors(o.outputs, written);
}

}  // namespace

void register_run_commands(CLI::App& app) {
  auto o = std::make_shared<RunCmd>();
  auto* cmd = app.add_subcommand(
      "run",
      "Run an ONNX model (or a graph made by `spire import`) once: each model input is read from --inputs by its "
      "ONNX name; each output is written to --outputs under its ONNX name in the model's dtype. The values of an .onnx "
      "model's integer inputs are also used at import where a shape needs them (the graph is specialised to them)");
  cmd->add_option("model", o->model, "MODEL.onnx, MODEL.graph, or MODEL.spire (a bundle from `spire compile`)")->required();
  cmd->add_option("--inputs", o->inputs, "safetensors file with the model's inputs")->required();
  cmd->add_option("--outputs", o->outputs, "safetensors file to write the outputs to")->required();
  cmd->add_option("--device", o->device,
                  "vulkan:N, cuda:N, 'reference' (the float64 evaluator) or 'all' (every device, with a table of "
                  "each one's difference from the reference); default: the best device present");
  cmd->add_option("--weights", o->weights, "Weights of a .graph model (default: MODEL.safetensors)");
  cmd->add_option("--bench", o->bench,
                  "Also replay the recorded inference N times after a warm-up and print the median and minimum "
                  "device time (the device's own timestamps); for a bundle also the median wall time of setting its "
                  "inputs from host memory, running and reading its outputs")
      ->check(CLI::PositiveNumber);
  add_dump_option(cmd, o->dump, "graph", "; with --device all, one subfolder per device");
  cmd->add_flag("--stats", o->stats,
                "Print the flops (a multiply-add is 2) and minimum bytes moved per op kind and in total, and each "
                "device's memory: weights, inputs and outputs, the transient arena against the values live at the "
                "worst launch");
  add_ops_option(cmd);
  add_passes_option(cmd, o->passes, {passes::PassPoint::AfterImport, passes::PassPoint::BeforeFusion},
                    "after_import (default: the imported graph, what the reference and every device run), "
                    "before_fusion (inside lowering, after decompose: devices only; with --device all the "
                    "reference runs the graph before them, so the table checks the rewrite too)");
  cmd->add_flag("--profile", o->profile,
                "Also print every launch of the inference (node, kernel) with its median device time over the "
                "--bench runs (or one run), from a device timestamp after each launch; launches that read only "
                "parameters run in the first inference only and are not listed (the plan in --dump marks them)");
  cmd->add_flag("--profile-startup", o->profile_startup,
                "For a bundle: print where the time from process start to the first result went (devices listed and "
                "opened, the bundle read, kernels loaded with the pipeline or cubin cache's hits, weights uploaded, "
                "the first run), with the wall milliseconds of each phase and the total");
  cmd->add_option("--memory-budget", o->memory_budget,
                  "Device memory the model may take (bytes; k, M, G: powers of 1000): over it, the launches that read "
                  "only parameters run every inference; still over, spire refuses and says the least it needs")
      ->type_name("BYTES");
  cmd->add_flag("--rerun-weight-launches", o->rerun_weight_launches,
                "Run the launches that read only parameters (weights widened to f32, Winograd weight transforms, "
                "channels-last weight moves) in every inference instead of once with their results kept: less device "
                "memory (resnet18 at batch 1 in f32: an 18 MB arena instead of 75), more time");
  add_precision_option(cmd, o->precision);
  add_tuning_options(cmd, o->tuning);
  cmd->callback([o] { run_run(*o); });
}

}  // namespace spire::cli
