// spire reduce MODEL --inputs IN --devices D -o SMALL.graph: shrinks a model that fails on a device to the smallest cut
// of it that still fails (diff/reduce.h), written with its inputs so that `spire diff SMALL.graph --inputs
// SMALL.inputs.safetensors` shows the failure again (docs/DIFF.md, "spire reduce"). Exit status: 0 when a reduced
// model was written, 1 when there is nothing to reduce (the model does not fail as --until says), 2 for an argument
// error, 3 for bad input (a missing file, an unknown device, inputs that do not fit the model).
#include <cmath>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "diff/cut.h"
#include "diff/reduce.h"
#include "diff/report.h"
#include "diff/tuning_blame.h"
#include "io/file_bytes.h"
#include "io/tensor_file.h"
#include "tools/spire/chosen_devices.h"
#include "tools/spire/commands.h"
#include "tools/spire/onnx_model.h"
#include "tuning/tuning_cache.h"

namespace spire::cli {
namespace {

struct ReduceCmd {
  std::string model, inputs, weights, devices, until = "first-divergence", output;
  CLI::Option* ops = nullptr;  // --ops (add_ops_option): the paths given, for the command line that shows the result
  double atol = 0, rtol = 0;
  CLI::Option *atol_given = nullptr, *rtol_given = nullptr;
  tuning::TuningFlags tuning;
  bool blame_tuning = false;  // --tuning
};

// Thrown for a model that does not fail: nothing to reduce (exit status 1, not 3).
struct NothingToReduce : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The runs spire reduce promises for one faulty node among n values (docs/DIFF.md): ceil(log2 n) + 5.
size_t run_bound(size_t n) { return size_t(std::ceil(std::log2(double(std::max<size_t>(n, 1))))) + 5; }

// --tuning: which of the cache's choices the reduced model's failure depends on; writes the cache without the bad
// ones to SMALL.tuning.txt (every other entry, of every device, kept as it was).
void blame_tuning_choices(const ReduceCmd& o, const diff::Reduction& r, rt::Device& dev,
                          const diff::ReduceOptions& options, const lowering::MapTuningChoices& choices) {
  const std::string cache_file =
      o.tuning.cache_file.empty() ? tuning::TuningCache::default_path() : o.tuning.cache_file;
  fmt::print(
      "\n--tuning: the reduced model with every template's heuristic config, then with each of the {} choices "
      "of {} for {} alone\n",
      choices.configs.size(), cache_file, dev.info().id);
  const diff::TuningBlame b = diff::blame_tuning(r.smallest.graph, r.smallest.feeds, dev, options, choices, r.target);
  if (!b.depends) {
    fmt::print(
        "with the heuristic configs it still fails ({}; {} run): the failure does not depend on the tuning "
        "cache; no cache written\n",
        b.heuristic_why, b.runs);
    return;
  }
  size_t bad = 0;
  for (const diff::ConfigVerdict& v : b.verdicts) {
    fmt::print("  {:4}  {}: {}  ({})\n", v.bad ? "bad" : "good", v.key.text(), v.config.text(), v.why);
    bad += v.bad ? 1 : 0;
  }
  fmt::print("with the heuristic configs it passes; {} of the {} choices it uses make it fail ({} runs)\n", bad,
             b.verdicts.size(), b.runs);
  tuning::TuningCache::Entries entries;
  if (std::filesystem::exists(cache_file)) {
    const auto bytes = io::read_file_bytes(cache_file);
    entries = tuning::TuningCache::parse(std::string(bytes.begin(), bytes.end()));
  }
  const tuning::DeviceKey device = tuning::DeviceKey::of(dev.info());
  for (const diff::ConfigVerdict& v : b.verdicts)
    if (v.bad) entries.erase({device, v.key});
  std::filesystem::path out = o.output;
  out.replace_extension(".tuning.txt");
  const std::string text = tuning::TuningCache::format(entries);
  io::write_file_bytes_atomically(out, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  fmt::print("wrote {}: {} without the {} bad entr{} ({} left; --tuning-cache {} runs with it)\n", out.string(),
             cache_file, bad, bad == 1 ? "y" : "ies", entries.size(), out.string());
}

// The files reduce writes must not be the ones it reads: -o MODEL.graph would write the reduced model over the model
// and its inputs over MODEL.safetensors, the model's weights.
void check_writes_no_input(const ReduceCmd& o, const diff::CutFiles& files) {
  namespace fs = std::filesystem;
  std::vector<fs::path> read{o.model, o.inputs};
  if (const std::string w = weights_path(o.model, o.weights); !w.empty()) read.emplace_back(w);
  for (const fs::path& written : {files.graph, files.weights, files.inputs})
    for (const fs::path& r : read)
      if (fs::weakly_canonical(written) == fs::weakly_canonical(r))
        throw std::runtime_error(fmt::format("-o {} would write {}, which this command reads; choose another name",
                                             o.output, written.string()));
}

void run_reduce(const ReduceCmd& o) {
  for (const std::string& f : {o.model, o.inputs})
    if (!std::filesystem::is_regular_file(f)) throw std::runtime_error(fmt::format("{}: no such file", f));
  const diff::CutFiles files = diff::CutFiles::beside(o.output);
  check_writes_no_input(o, files);
  const auto given = io::load_tensors(o.inputs);
  LoadedModel m = load_model(o.model, o.weights, given, o.inputs);
  const auto feeds = input_feeds(m, given, o.inputs);
  const std::vector<std::string> devices = chosen_devices(o.devices);
  if (devices.size() != 1)
    throw std::runtime_error(fmt::format("--devices: reduce follows one device's failure; name one (got {})",
                                         devices.empty() ? "none present" : o.devices));
  auto dev = rt::open_device(devices[0]);
  const lowering::MapTuningChoices choices = tuning::prepare_tuning(o.tuning, *dev, {&m.graph}, stdout);
  diff::ReduceOptions options{.until = *diff::until_from_name(o.until), .compile = {.tuning = &choices}};
  if (o.atol_given->count() > 0) options.tolerance.atol = o.atol;
  if (o.rtol_given->count() > 0) options.tolerance.rtol = o.rtol;

  fmt::print("reducing {} on {} ({}), until {}; tolerance: {}\n", o.model, dev->info().id, dev->info().name, o.until,
             diff::rule_text(options.tolerance));
  size_t run = 0;
  const diff::Reduction r = diff::reduce(m.graph, feeds, *dev, options, [&](const diff::ReduceRun& step) {
    fmt::print("  run {}: {} ({} value{}): {}\n", ++run, step.what, step.nodes, step.nodes == 1 ? "" : "s",
               step.fails ? "fails: " + step.why : "passes");
    std::fflush(stdout);
  });
  if (!r.fails)
    throw NothingToReduce(
        fmt::format("nothing to reduce: {} on {} for {}; nothing was written", r.why, dev->info().id, o.model));

  diff::save_cut(r.smallest, files);
  fmt::print(
      "\n{} of the model's {} values still fail{} ({} runs; the bound for one faulty node is ceil(log2 {}) + 5 "
      "= {}): {}\n",
      r.nodes.size(), r.model_values, r.nodes.size() == 1 ? "s" : "", r.runs.size(), r.model_values,
      run_bound(r.model_values), fmt::join(r.nodes, ", "));
  fmt::print("\n{}", diff::report_text({r.comparison}, {.rule = diff::rule_text(options.tolerance)}));
  if (o.blame_tuning) blame_tuning_choices(o, r, *dev, options, choices);
  std::string ops;
  for (const std::string& f : o.ops->results()) ops += " --ops " + f;
  // The command that shows the failure again judges by the same tolerance and reads the same cache (a failure may need
  // the cache's configs).
  std::string same;
  if (o.atol_given->count() > 0) same += fmt::format(" --atol {}", o.atol);
  if (o.rtol_given->count() > 0) same += fmt::format(" --rtol {}", o.rtol);
  if (!o.tuning.cache_file.empty()) same += " --tuning-cache " + o.tuning.cache_file;
  fmt::print(
      "\nwrote {} (weights: {}, inputs: {}); to see the failure again:\n  spire diff{} {} --inputs {} --devices {}{}\n",
      files.graph.string(), files.weights.string(), files.inputs.string(), ops, files.graph.string(),
      files.inputs.string(), dev->info().id, same);
}

}  // namespace

void register_reduce_commands(CLI::App& app) {
  auto o = std::make_shared<ReduceCmd>();
  auto* cmd = app.add_subcommand(
      "reduce",
      "Shrink a model that fails on a device to the smallest cut of it that still fails: a cut's inputs are the "
      "float64 reference's values, and the cut that still fails is kept (first the failing value alone, then "
      "bisection in topological order). Writes SMALL.graph, its weights SMALL.safetensors and its inputs "
      "SMALL.inputs.safetensors, which `spire diff SMALL.graph --inputs SMALL.inputs.safetensors` runs. Exit status "
      "0: written; 1: the model does not fail as --until says (nothing written); 2: an argument error; 3: bad input "
      "(a missing file, an unknown device, inputs that do not fit the model). docs/DIFF.md");
  cmd->add_option("model", o->model, "MODEL.onnx or MODEL.graph")->required();
  cmd->add_option("--inputs", o->inputs, "safetensors file with the model's inputs (by ONNX name)")->required();
  cmd->add_option("--weights", o->weights, "Weights of a .graph model (default: MODEL.safetensors)");
  cmd->add_option("--devices", o->devices, "The one device (vulkan:N, cuda:N) whose failure to follow")->required();
  cmd->add_option("--until", o->until,
                  "What failing means: first-divergence (default: the model's first value off is still off), nan (a "
                  "value NaN or infinite where the reference has a number), exit (spire diff would exit non-zero: any "
                  "value off, or the device cannot run it)")
      ->check(CLI::IsMember({"first-divergence", "nan", "exit"}));
  cmd->add_option("-o,--output", o->output,
                  "SMALL.graph: the reduced model as spire's graph text (weights and inputs are written beside it)")
      ->required()
      ->check(CLI::Validator(
          [](std::string& path) -> std::string {
            if (path.ends_with(".graph")) return {};
            if (path.ends_with(".onnx"))
              return "spire reduce does not write ONNX; write spire's graph text with -o SMALL.graph (spire diff, "
                     "spire run and spire graph read it)";
            return "must name a .graph file, not '" + path + "'";
          },
          "SMALL.graph"));
  o->atol_given = cmd->add_option("--atol", o->atol, "Absolute tolerance, as spire diff's (default: the op table's)")
                      ->check(positive_number(true));
  o->rtol_given =
      cmd->add_option("--rtol", o->rtol, "Relative tolerance, as spire diff's")->check(positive_number(true));
  add_ops_option(cmd);
  o->ops = cmd->get_option("--ops");
  add_tuning_options(cmd, o->tuning);
  cmd->add_flag(
      "--tuning", o->blame_tuning,
      "Also find which of the tuning cache's choices (--tuning-cache) the reduced model's failure depends on: "
      "run it with every heuristic config, then with each choice alone, print each as good or bad, and write "
      "the cache without the bad ones to SMALL.tuning.txt");
  cmd->callback([o] {
    try {
      run_reduce(*o);
    } catch (const NothingToReduce& e) {
      fmt::print(stderr, "spire: error: {}\n", e.what());
      throw CommandExit{1};
    } catch (const std::exception& e) {
      fmt::print(stderr, "spire: error: {}\n", e.what());
      throw CommandExit{3};
    }
  });
}

}  // namespace spire::cli
