// spire lenet export|init|bench: the seed article's LeNet as a graph file and as initial weights, and its
// training step timed on a device.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "frontend/lenet.h"
#include "io/tensor_file.h"
#include "ir/graph/text_form.h"
#include "lowering/executable.h"
#include "runtime/device.h"
#include "tools/spire/commands.h"
#include "tools/spire/step_bench.h"

namespace spire::cli {
namespace {

graph::DType float_dtype(const std::string& name) { return name == "f64" ? graph::DType::F64 : graph::DType::F32; }

struct ExportOptions {
  int64_t batch = 0;
  std::string dtype = "f32";
  bool sgd = false;
  double lr = 0.01;
  double momentum = 0.9;
  double weight_decay = 0.0;
  std::string output;
};

void run_export(const ExportOptions& o) {
  nn::LeNetGraphOptions opt;
  opt.batch = o.batch;
  opt.dtype = float_dtype(o.dtype);
  opt.sgd = o.sgd;
  opt.sgd_options = {.lr = o.lr, .momentum = o.momentum, .weight_decay = o.weight_decay};
  const std::string text = graph::print(nn::build_lenet_graph(opt));
  if (o.output == "-") {
    fmt::print("{}", text);
    return;
  }
  std::ofstream out(o.output, std::ios::binary);
  if (!out) throw std::runtime_error(fmt::format("{}: cannot create: {}", o.output, std::strerror(errno)));
  out << text;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("{}: write error", o.output));
}

struct InitOptions {
  uint64_t seed = 0;
  std::string dtype = "f32";
  std::string output;
};

void run_init(const InitOptions& o) {
  io::save_tensors(o.output, nn::lenet_initial_parameters(o.seed, float_dtype(o.dtype)),
                   {{"model", "lenet"}, {"init", "pytorch-default"}, {"seed", std::to_string(o.seed)}});
}

struct BenchOptions {
  int64_t batch = 64;
  std::string device;
  int runs = 50;
  bool profile = false;
  tuning::TuningFlags tuning;
};

// One training step (forward, loss, backward, SGD with momentum) on random pixels and labels, timed by the
// device: what an epoch of `spire train lenet` replays, without the data loading around it.
void run_bench(const BenchOptions& o) {
  nn::LeNetGraphOptions opt;
  opt.batch = o.batch;
  opt.sgd = true;
  opt.sgd_options = {.lr = 0.05, .momentum = 0.9, .weight_decay = 0};
  const graph::Graph g = nn::build_lenet_graph(opt);
  auto dev = rt::open_device(o.device);
  const lowering::MapTuningChoices choices = tuning::prepare_tuning(o.tuning, *dev, {&g}, stdout);
  auto exe = lowering::compile(g, *dev, {.tuning = &choices, .profile = o.profile});
  for (const auto& [name, t] : nn::lenet_initial_parameters(0)) exe->set(name, t);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> pixel(-1, 1);
  std::vector<float> x(size_t(o.batch * 784));
  std::vector<int32_t> y(size_t(o.batch));
  for (float& v : x) v = pixel(rng);
  for (int32_t& v : y) v = int32_t(rng() % 10);
  exe->set_raw("x", x.data(), x.size() * sizeof(float));
  exe->set_raw("y", y.data(), y.size() * sizeof(int32_t));
  exe->step();
  StepTiming timing;
  timing.runs = o.runs;
  timing.profile = o.profile;
  bench_step(*exe, dev->info(), timing);
  fmt::print("LeNet training step, batch {}, on {} ({})\n", o.batch, dev->info().id, dev->info().name);
  if (o.profile) fmt::print("{}", profile_table(dev->info().id, timing));
  fmt::print("{}", bench_table({{dev->info().id, timing}}));
}

}  // namespace

void register_lenet_commands(CLI::App& app) {
  auto* group = app.add_subcommand("lenet", "The seed article's LeNet-5: its training-step graph, initial weights and the step timed on a device");
  group->require_subcommand(1);
  {
    auto o = std::make_shared<ExportOptions>();
    auto* cmd = group->add_subcommand(
        "export",
        "Write LeNet's training-step graph: inputs x [N,1,28,28] and y [N] (i64 labels), parameters named as "
        "PyTorch's state_dict (convnet.0.weight, ..., fc.5.bias), outputs logits, loss (mean cross-entropy) and "
        "grad.<parameter>. With --sgd, also the SGD-with-momentum update (states momentum.<parameter>, written "
        "back as state updates), so the graph is one full training step");
    cmd->add_option("--batch", o->batch, "Batch size N")->required()->check(positive_number());
    cmd->add_option("--dtype", o->dtype, "Float type of x, the parameters and the arithmetic (default f32)")
        ->check(CLI::IsMember({"f32", "f64"}));
    cmd->add_flag("--sgd", o->sgd, "Append the optimizer step (torch.optim.SGD semantics)");
    auto* lr = cmd->add_option("--lr", o->lr, "SGD learning rate (default 0.01)");
    auto* momentum = cmd->add_option("--momentum", o->momentum, "SGD momentum (default 0.9; 0 for plain SGD)");
    auto* wd = cmd->add_option("--weight-decay", o->weight_decay, "SGD L2 weight decay (default 0)");
    for (auto* opt : {lr, momentum, wd}) opt->needs("--sgd");
    cmd->add_option("-o,--output", o->output, "Graph file to write ('-': stdout)")->required();
    cmd->callback([o] { run_export(*o); });
  }
  {
    auto o = std::make_shared<InitOptions>();
    auto* cmd = group->add_subcommand(
        "init",
        "Write LeNet's initial parameters to a safetensors file under PyTorch's state_dict names, drawn as "
        "PyTorch's default init does (U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for every weight and bias) from spire's "
        "own seeded generator: the same seed gives the same file everywhere, but not torch.manual_seed's values");
    cmd->add_option("--seed", o->seed, "Random seed")->required();
    cmd->add_option("--dtype", o->dtype, "F32 or F64 tensors (default f32)")->check(CLI::IsMember({"f32", "f64"}));
    cmd->add_option("-o,--output", o->output, "safetensors file to write")->required();
    cmd->callback([o] { run_init(*o); });
  }
  {
    auto o = std::make_shared<BenchOptions>();
    auto* cmd = group->add_subcommand(
        "bench",
        "Time LeNet's training step (forward, cross-entropy, backward, SGD with momentum; what `spire train lenet` "
        "replays per minibatch) on a device, on random pixels and labels: the median and minimum device time of "
        "--runs replays after a warm-up (the device's own timestamps)");
    cmd->add_option("--batch", o->batch, "Batch size (default 64)")->check(positive_number());
    cmd->add_option("--device", o->device, "Device (vulkan:N, cuda:N); default: the best present");
    cmd->add_option("--runs", o->runs, "Timed replays (default 50)")->check(positive_number());
    cmd->add_flag("--profile", o->profile,
                  "Also print every launch of the step (node, kernel) with its median device time over the runs");
    add_tuning_options(cmd, o->tuning);
    cmd->callback([o] { run_bench(*o); });
  }
}

}  // namespace spire::cli
