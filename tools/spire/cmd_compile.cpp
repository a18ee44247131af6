// spire compile MODEL -o MODEL.spire: ahead-of-time compilation into a bundle (bundle/bundle.h) that
// libspire_runtime (include/spire/spire.h) or `spire run MODEL.spire` runs with no compiler present.
#include <filesystem>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "bundle/bundle_file.h"
#include "bundle/compiler/compile_bundle.h"
#include "bundle/compiler/target_profiles.h"
#include "lowering/precision_policy.h"
#include "tools/spire/precision_option.h"
#include "tools/spire/commands.h"
#include "tools/spire/onnx_model.h"
#include "training/progress_bar.h"

namespace spire::cli {
namespace {

struct CompileCmd {
  std::string model, output, weights, targets = "spirv,ptx";
  int64_t batch = 0;
  bool dynamic_batch = false, exact_batches = false;
  bool rerun_weight_launches = false;  // --rerun-weight-launches: lowering's parameters_once off
  Precision precision = Precision::Fp32;  // --precision: every plan's policy, recorded in the bundle
};

bool is_graph_file(const std::string& path) { return std::filesystem::path(path).extension() == ".graph"; }

bundle::ModelAtBatch model_at(const CompileCmd& o, int64_t batch) {
  LoadedModel m;
  if (is_graph_file(o.model)) {
    std::string weights = o.weights;
    if (weights.empty()) weights = std::filesystem::path(o.model).replace_extension(".safetensors").string();
    m = load_graph_model(o.model, weights);
  } else {
    onnx_import::ImportOptions opt;
    opt.batch = batch ? batch : o.batch;
    opt.missing_shape_hint = "spire compile binds only a symbolic first (batch) dimension, from --batch";
    onnx_import::ImportedModel im = onnx_import::import_model(o.model, opt);
    m.graph = std::move(im.graph);
    for (auto& [name, t] : im.weights) m.weights.emplace(name, std::move(t));
    m.inputs = std::move(im.inputs);
    m.outputs = std::move(im.outputs);
  }
  bundle::ModelAtBatch out{std::move(m.graph), std::move(m.weights), {}, {}};
  for (const auto& b : m.inputs) out.inputs.push_back({b.onnx_name, b.graph_name});
  for (const auto& b : m.outputs) out.outputs.push_back({b.onnx_name, b.graph_name});
  return out;
}

void run_compile(const CompileCmd& o) {
  if (o.dynamic_batch && is_graph_file(o.model))
    throw std::invalid_argument("--dynamic-batch: a .graph file has fixed shapes; compile the .onnx model instead");
  if (o.dynamic_batch && o.batch == 0)
    throw std::invalid_argument("--dynamic-batch needs --batch N, the largest batch the bundle will run");
  if (o.exact_batches && !o.dynamic_batch) throw std::invalid_argument("--exact-batches goes with --dynamic-batch");
  bundle::CompileBundleOptions opt;
  opt.targets = bundle::target_profiles(o.targets);
  opt.max_batch = o.batch;
  opt.dynamic_batch = o.dynamic_batch;
  opt.exact_batches = o.exact_batches;
  opt.parameters_once = !o.rerun_weight_launches;
  opt.precision = o.precision;
  for (const rt::DeviceInfo& target : opt.targets)
    if (const std::string note = lowering::precision_note(target, o.precision); !note.empty())
      fmt::print(stderr, "spire: note: {}\n", note);
  opt.model_name = std::filesystem::path(o.model).filename().string();
  std::unique_ptr<training::ProgressBar> bar;
  opt.progress = [&](size_t done, size_t total, const std::string& target, int64_t batch) {
    if (!bar) bar = std::make_unique<training::ProgressBar>("compiling plans", total, stderr, "plan");
    bar->update(done, batch ? fmt::format("{} batch {}", target, batch) : target);
  };
  const bundle::Bundle b = bundle::compile_bundle([&](int64_t batch) { return model_at(o, batch); }, opt);
  if (bar) bar->finish();
  bundle::write_bundle(o.output, b);

  fmt::print("{:<14} {:>6} {:>8} {:>9} {:>12}\n", "target", "batch", "kernels", "launches", "arena bytes");
  for (const auto& p : b.plans)
    fmt::print("{:<14} {:>6} {:>8} {:>9} {:>12}\n", p.target, p.batch ? std::to_string(p.batch) : "-", p.kernels.size(),
               p.launches.size(), p.arena_bytes);
  uint64_t weight_bytes = 0;
  for (const auto& w : b.weights) weight_bytes += w.bytes.size();
  fmt::print("wrote {} ({} bytes; {} weights, {} bytes; precision {}){}\n", o.output,
             std::filesystem::file_size(o.output), b.weights.size(), weight_bytes, precision_name(b.precision),
             b.dynamic_batch ? fmt::format("; runs any batch 1..{}", b.max_batch) : std::string());
}

}  // namespace

void register_compile_commands(CLI::App& app) {
  auto o = std::make_shared<CompileCmd>();
  auto* cmd = app.add_subcommand(
      "compile",
      "Compile a model ahead of time into one bundle file: the plan, the weights and every kernel as SPIR-V and/or PTX, "
      "with a format version and a checksum. `spire run BUNDLE` and libspire_runtime (include/spire/spire.h) run it "
      "with no compiler and no CUDA toolkit; docs/BUNDLE.md describes the format");
  cmd->add_option("model", o->model, "MODEL.onnx, or MODEL.graph (weights in MODEL.safetensors or --weights)")->required();
  cmd->add_option("-o,--output", o->output, "The bundle file to write (MODEL.spire)")->required();
  cmd->add_option("--batch", o->batch,
                  "The batch: binds the model's symbolic first input dimension; with --dynamic-batch, the largest batch")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--dynamic-batch", o->dynamic_batch,
                "One bundle for every batch from 1 to --batch: plans for batches 1, 2, 4, ... and --batch; a run uses "
                "the smallest plan that holds its batch, with zero rows as padding (each output row must depend on its "
                "own input row only, as in inference)");
  cmd->add_flag("--exact-batches", o->exact_batches,
                "With --dynamic-batch: a plan for every batch 1..--batch, no padding (larger file)");
  cmd->add_option("--targets", o->targets,
                  "Comma list of targets: spirv (any Vulkan 1.1 device), ptx (NVIDIA sm_75 and newer), ptx:sm_NN")
      ->capture_default_str();
  cmd->add_option("--weights", o->weights, "Weights of a .graph model (default: MODEL.safetensors)");
  cmd->add_flag("--rerun-weight-launches", o->rerun_weight_launches,
                "Run the launches that read only weights (weights widened to f32, Winograd weight transforms, "
                "channels-last weight moves) in every run instead of in a plan's first run with their results kept: "
                "less device memory (resnet18 at batch 1 in f32: an 18 MB arena instead of 75), more time");
  add_precision_option(cmd, o->precision);
  cmd->callback([o] { run_compile(*o); });
}

}  // namespace spire::cli
