// spire diff MODEL --inputs IN [--devices D1,D2|all]: every intermediate value of the model on each device against
// the float64 reference, and the first value that diverges on each (diff/, docs/DIFF.md). Exit status: 0 when every
// device agrees within tolerance, 1 when one does not, 2 for an argument error, 3 when nothing could be compared (a
// missing file, an unknown device, inputs that do not fit the model, a saved run of another model).
#include <algorithm>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bundle/bundle_file.h"
#include "bundle/session.h"
#include "diff/capture.h"
#include "diff/compare.h"
#include "diff/half_precision.h"  // to_half, widened
#include "diff/report.h"
#include "diff/saved_run.h"
#include "io/file_bytes.h"
#include "io/tensor_file.h"
#include "tools/spire/chosen_devices.h"
#include "tools/spire/commands.h"
#include "tools/spire/onnx_model.h"
#include "tools/spire/run_bundle.h"

namespace spire::cli {
namespace {

struct DiffCmd {
  std::string model, inputs, weights, devices = "all", json, save, against;
  double atol = 0, rtol = 0;
  CLI::Option *atol_given = nullptr, *rtol_given = nullptr;
  bool every_value = false;
  std::string precision;  // --precision f16|bf16
  tuning::TuningFlags tuning;
};

// --precision: which values, kept in f32, bring the outputs of the half run within tolerance (a sentence for the
// device's notes).
std::string keep_in_f32_note(const graph::Graph& g, graph::DType half, const std::map<std::string, graph::Tensor>& half_feeds,
                             rt::Device& dev, const lowering::CompileOptions& options, const diff::Capture& reference,
                             const diff::Comparison& half_run) {
  std::vector<std::string> ranked;
  for (const diff::PrecisionRow& r : diff::error_growth(half_run, half_run.rows.size())) ranked.push_back(r.name);
  const diff::KeepProposal p = diff::propose_f32_set(ranked, [&](const std::set<std::string>& keep) {
    return diff::outputs_within(g, half, keep, half_feeds, dev, options, reference, half_run);
  });
  if (!p.found)
    return fmt::format("even with every value in f32 the outputs are not within tolerance ({} run)", p.runs);
  return fmt::format("keeping these {} values (those whose error grows most) in f32 brings every output within "
                     "tolerance ({} runs to find them): {}",
                     p.keep.size(), p.runs, fmt::join(p.keep, ", "));
}

// A bundle's own kernels on `dev`: one run of its plan for that device (bundle::Session, what libspire_runtime runs)
// on the given inputs, each output judged against the float64 reference by the rule of its value's row in `cmp` (the
// comparison of the bundle's source graph, which spire's compiler compiled for the device). One note per output;
// false when one is not within.
bool check_bundle_kernels(const std::string& path, const LoadedModel& m, const std::map<std::string, graph::Tensor>& given,
                          const std::string& source, rt::Device& dev, const diff::Capture& reference,
                          const diff::ToleranceOverride& tolerance, diff::Comparison& cmp) {
  auto b = std::make_shared<const bundle::Bundle>(bundle::read_bundle(path));
  bundle::Session s(b, dev);
  feed_session(s, given, source);
  s.run();
  const std::map<std::string, graph::Tensor> got = session_outputs(s);
  bool all_within = true;
  for (const auto& out : m.outputs) {
    const std::optional<graph::Value> v = m.graph.find_output(out.graph_name);
    const std::string& node = m.graph.node(*v).name;
    auto want = reference.values.find(node);
    auto row = std::find_if(cmp.rows.begin(), cmp.rows.end(), [&](const diff::ValueRow& r) { return r.name == node; });
    if (want == reference.values.end() || row == cmp.rows.end()) continue;  // an input passed through: no kernel
    const diff::ValueError e = diff::measure(got.at(out.onnx_name), want->second);
    const diff::Verdict verdict = diff::judge(e, m.graph.node(*v).op, want->second.dtype, tolerance, row->verdict.bound);
    all_within = all_within && verdict.within;
    const int64_t batch = s.current_plan().batch;
    cmp.notes.push_back(fmt::format("the bundle's own kernels (its {} plan{}): output '{}' {} (error {:.2e}, bound {:.2e})",
                                    s.current_plan().target, batch ? fmt::format(" for batch {}", batch) : "",
                                    out.onnx_name, verdict.within ? "within tolerance" : "NOT within tolerance",
                                    verdict.measured, verdict.bound));
  }
  return all_within;
}

// Returns the exit status.
int run_diff(const DiffCmd& o) {
  if (!o.model.ends_with(".onnx") && !o.model.ends_with(".graph") && !o.model.ends_with(".spire"))
    throw std::runtime_error(
        fmt::format("{}: not a model spire diff reads (MODEL.onnx, MODEL.graph or a bundle, MODEL.spire)", o.model));
  for (const std::string& f : {o.model, o.inputs})
    if (!std::filesystem::is_regular_file(f)) throw std::runtime_error(fmt::format("{}: no such file", f));
  const std::vector<std::string> devices = chosen_devices(o.devices);
  if (devices.empty() && o.against.empty())
    throw std::runtime_error("no device to compare: no Vulkan or CUDA device is present (`spire devices`)");

  const auto given = io::load_tensors(o.inputs);
  LoadedModel m = load_model(o.model, o.weights, given, o.inputs);
  const auto feeds = input_feeds(m, given, o.inputs);
  std::vector<std::filesystem::path> model_files{o.model};
  if (const std::string w = weights_path(o.model, o.weights); !w.empty()) model_files.push_back(w);
  const diff::RunIdentity identity{o.model, diff::files_hash(model_files), o.inputs, diff::files_hash({o.inputs})};
  // Read the saved run first: a wrong directory is refused before minutes of running.
  std::optional<diff::SavedRun> saved;
  if (!o.against.empty()) saved = diff::load_run(o.against, identity);

  const diff::Capture reference = diff::capture_reference(m.graph, feeds);
  // --precision: the devices run the model with its f32 values in half precision, compared with the same reference.
  std::optional<graph::DType> half;
  if (!o.precision.empty()) half = o.precision == "f16" ? graph::DType::F16 : graph::DType::BF16;
  const graph::Graph run_graph = half ? diff::to_half(m.graph, *half) : m.graph;
  const auto run_feeds = half ? diff::to_half(feeds, *half) : feeds;
  diff::ToleranceOverride tolerance;
  if (o.atol_given->count() > 0) tolerance.atol = o.atol;
  if (o.rtol_given->count() > 0) tolerance.rtol = o.rtol;
  // A node alone is re-run on the inputs the device was given: with --precision, the feeds rounded to half.
  const auto own_feeds = half ? diff::widened(run_feeds, m.graph) : feeds;
  const diff::CompareOptions options{.tolerance = tolerance, .feeds = &own_feeds, .judged_as = half};

  std::vector<diff::Capture> captures;
  std::vector<diff::Comparison> comparisons;
  if (saved) {
    // The saved devices are compared with this machine's reference; the saved one should be the same numbers.
    const diff::Comparison refs = diff::compare(m.graph, saved->reference, reference, {.tolerance = options.tolerance});
    for (const auto& s : saved->devices) {
      comparisons.push_back(diff::compare(m.graph, s, reference, options));
      if (!refs.agrees())
        comparisons.back().notes.push_back(fmt::format(
            "the saved float64 reference differs from this machine's from value '{}' on (error {:g}): the two machines' "
            "evaluators disagree, so compare the devices with each other", refs.rows[*refs.first].name,
            refs.rows[*refs.first].verdict.measured));
    }
  }
  bool bundle_off = false;  // a bundle's own kernels gave an output off
  for (const std::string& id : devices) {
    // A device that cannot run the model (a GLSL custom op on cuda:N) is reported, and the others still compared.
    try {
      auto dev = rt::open_device(id);
      const lowering::MapTuningChoices choices = tuning::prepare_tuning(o.tuning, *dev, {&run_graph}, stdout);
      diff::Capture c = diff::capture_device(run_graph, run_feeds, *dev, {.tuning = &choices});
      captures.push_back(half ? diff::widened(c, m.graph) : std::move(c));
      comparisons.push_back(diff::compare(m.graph, captures.back(), reference, options));
      if (saved)
        for (const auto& s : saved->devices)
          comparisons.push_back(diff::compare(m.graph, captures.back(), s, {.tolerance = options.tolerance}));
      if (o.model.ends_with(".spire") && !half) {
        comparisons.back().notes.push_back(
            "a bundle: the values above are its source graph's, compiled for this device by spire's compiler; its own "
            "kernels computed the outputs below");
        bundle_off = !check_bundle_kernels(o.model, m, given, o.inputs, *dev, reference, options.tolerance,
                                           comparisons.back()) || bundle_off;
      }
      if (half && !comparisons.back().agrees())
        comparisons.back().notes.push_back(keep_in_f32_note(m.graph, *half, run_feeds, *dev, {.tuning = &choices},
                                                            reference, comparisons.back()));
    } catch (const std::exception& e) {
      diff::Comparison failed;
      failed.device = id;
      failed.against = "reference";
      failed.failure = e.what();
      for (const auto& info : rt::list_devices())
        if (info.id == id) failed.device_name = info.name, failed.driver = info.driver;
      comparisons.push_back(std::move(failed));
    }
  }


  const diff::ReportOptions report{
      .rule = diff::rule_text(options.tolerance), .every_value = o.every_value, .precision = half};
  fmt::print("{}", diff::report_text(comparisons, report));
  if (!o.json.empty()) {
    const std::string text = diff::report_json(comparisons, report, o.model, o.inputs);
    io::write_file_bytes_atomically(o.json, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
  if (!o.save.empty()) {
    diff::save_run(o.save, identity, reference, captures);
    fmt::print("saved the reference and {} device(s) to {}\n", captures.size(), o.save);
  }
  const bool agree = std::all_of(comparisons.begin(), comparisons.end(), [](const auto& c) { return c.agrees(); });
  return agree && !bundle_off ? 0 : 1;
}

}  // namespace

void register_diff_commands(CLI::App& app) {
  auto o = std::make_shared<DiffCmd>();
  auto* cmd = app.add_subcommand(
      "diff",
      "Run a model on each device keeping every intermediate value, compare each with the float64 reference and name "
      "the first value (in topological order) that is off, with its node, kernel and whether its inputs were already "
      "off. Exit status 0: every device agrees within tolerance; 1: one does not; 3: nothing could be compared (bad "
      "input). docs/DIFF.md");
  cmd->add_option("model", o->model,
                  "MODEL.onnx, MODEL.graph, or a bundle (MODEL.spire: the graph it was compiled from, at its largest "
                  "batch, with its weights)")
      ->required();
  cmd->add_option("--inputs", o->inputs, "safetensors file with the model's inputs (by ONNX name)")->required();
  cmd->add_option("--weights", o->weights, "Weights of a .graph model (default: MODEL.safetensors)");
  cmd->add_option("--devices", o->devices, "D1,D2,... (vulkan:N, cuda:N) or 'all' (default): every device present");
  o->atol_given = cmd->add_option("--atol", o->atol, "Absolute tolerance: with --rtol, a value agrees when max |got-want| <= atol + "
                                     "rtol * max |want| for every value (default: the op table's tolerances, as spire "
                                     "test-ops)")
      ->check(positive_number(true));
  o->rtol_given = cmd->add_option("--rtol", o->rtol, "Relative tolerance (see --atol)")->check(positive_number(true));
  cmd->add_option("--json", o->json, "Also write the comparison as JSON to this file");
  cmd->add_flag("--every-value", o->every_value, "List every value in the table, not only those off");
  cmd->add_option("--save", o->save,
                  "Write every value of every device and of the reference to this directory (safetensors files and a "
                  "manifest.json with the model's and the inputs' hashes), for --against on another machine");
  cmd->add_option("--against", o->against,
                  "Also compare with a run saved by --save (same model and inputs, else refused): each saved device "
                  "against the reference, and each device here against each saved one");
  cmd->add_option("--precision", o->precision,
                  "Run the model with its f32 values in f16 or bf16 (storage; ops compute in f32, docs/HALF_PRECISION.md), "
                  "compare every value with the float64 reference of the model as given, held to the op table's "
                  "tolerances for that dtype, and list the values whose error grows most")
      ->check(CLI::IsMember({"f16", "bf16"}))
      // A half-precision run is compared with the reference only; saved runs are of the model as it is given.
      ->excludes("--save")
      ->excludes("--against");
  add_ops_option(cmd);
  add_tuning_options(cmd, o->tuning);
  cmd->callback([o] {
    int status = 0;
    try {
      status = run_diff(*o);
    } catch (const std::exception& e) {
      fmt::print(stderr, "spire: error: {}\n", e.what());
      throw CommandExit{3};
    }
    if (status != 0) throw CommandExit{status};
  });
}

}  // namespace spire::cli
