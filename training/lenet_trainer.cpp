#include "training/lenet_trainer.h"

#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "frontend/lenet.h"
#include "io/tensor_file.h"
#include "dump/dump.h"
#include "lowering/executable.h"
#include "runtime/device.h"
#include "training/batches.h"
#include "training/progress_bar.h"
#include "tuning/tuning_setup.h"

namespace spire::training {

namespace {

using Clock = std::chrono::steady_clock;

// Parameters by PyTorch name: loaded from a checkpoint (checked against LeNet's names and shapes) or
// freshly initialised as PyTorch would.
nn::NamedTensors initial_parameters(const std::string& load, uint64_t seed) {
  if (load.empty()) return nn::lenet_initial_parameters(seed, graph::DType::F32);
  return nn::lenet_parameters_from(io::load_tensors(load), load, graph::DType::F32);
}

int32_t argmax10(const float* logits) {
  int32_t best = 0;
  for (int32_t c = 1; c < 10; ++c)
    if (logits[c] > logits[best]) best = c;
  return best;
}

// Accuracy of the parameters currently set in `forward` over the whole test set.
double test_accuracy(lowering::Executable& forward, const io::FashionMnist& test, int64_t eval_batch, float mean,
                     float std) {
  Batches batches(test, eval_batch, 0, mean, std);
  std::vector<float> x, logits(size_t(eval_batch * 10));
  std::vector<int32_t> y, labels;
  int64_t correct = 0, seen = 0;
  const int64_t n = batches.batches_per_epoch();
  batches.fill(0, x, y);
  for (int64_t b = 0; b < n; ++b) {
    forward.set_raw("x", x.data(), x.size() * sizeof(float));
    labels.swap(y);
    forward.start_step();
    if (b + 1 < n) batches.fill(b + 1, x, y);  // while the device runs this batch
    forward.finish_step();
    forward.get_raw("logits", logits.data(), logits.size() * sizeof(float));
    for (int64_t k = 0; k < eval_batch; ++k) correct += argmax10(&logits[size_t(k * 10)]) == labels[size_t(k)];
    seen += eval_batch;
  }
  return double(correct) / double(seen);
}

void check_eval_batch(int64_t eval_batch, const io::FashionMnist& test) {
  if (eval_batch <= 0 || test.images.count % eval_batch != 0)
    throw std::invalid_argument(fmt::format("--eval-batch {} must divide the {} test images", eval_batch, test.images.count));
}

}  // namespace

graph::Graph lenet_forward_graph(int64_t batch, const std::string& relu_op) {
  graph::Graph g;
  auto x = g.input("x", graph::DType::F32, {batch, 1, 28, 28});
  g.output("logits", nn::make_lenet(relu_op).forward(nn::Scope(g, graph::DType::F32), x));
  return g;
}

lowering::CompileOptions lenet_step_compile_options(const lowering::TuningChoices* tuning, int steps_in_flight) {
  // With 2, the loop submits the next step before it waits for this one (train_lenet).
  return {.tuning = tuning,
          .streamed_inputs = {"x", "y"},
          .streamed_outputs = {"loss"},
          .steps_in_flight = steps_in_flight};
}

lowering::CompileOptions lenet_forward_compile_options(const lowering::TuningChoices* tuning) {
  return {.tuning = tuning, .streamed_inputs = {"x"}, .streamed_outputs = {"logits"}};
}

std::vector<EpochReport> train_lenet(const TrainOptions& opt, std::FILE* log) {
  if (opt.epochs <= 0) throw std::invalid_argument("--epochs must be positive");
  if (!(opt.lr > 0)) throw std::invalid_argument("--lr must be positive");
  if (!(opt.pixel_std > 0)) throw std::invalid_argument("--normalize: the standard deviation must be positive");
  // The weights first: a file of the wrong architecture is refused before the data loads and the step compiles.
  const nn::NamedTensors params = initial_parameters(opt.load, opt.seed);
  io::FashionMnist train = io::load_fashion_mnist(opt.data_dir, io::Split::Train);
  io::FashionMnist test = io::load_fashion_mnist(opt.data_dir, io::Split::Test);
  check_eval_batch(opt.eval_batch, test);
  Batches batches(train, opt.batch, opt.limit, opt.pixel_mean, opt.pixel_std);

  auto device = rt::open_device(opt.device);
  fmt::print(log, "device {} ({}), {} training images, batch {}, lr {}, momentum {}, {} epochs\n", device->info().id,
             device->info().name, batches.images(), opt.batch, opt.lr, opt.momentum, opt.epochs);

  nn::LeNetGraphOptions gopt;
  gopt.batch = opt.batch;
  gopt.sgd = true;
  gopt.relu_op = opt.relu_op;
  gopt.sgd_options = {.lr = opt.lr, .momentum = opt.momentum, .weight_decay = opt.weight_decay};
  const graph::Graph step_graph = nn::build_lenet_graph(gopt);
  const graph::Graph forward_graph = lenet_forward_graph(opt.eval_batch, opt.relu_op);
  const lowering::MapTuningChoices choices =
      tuning::prepare_tuning({opt.tune, opt.tuning_cache, opt.precision}, *device, {&step_graph, &forward_graph}, log);
  if (!opt.dump_dir.empty()) {
    // 01-graph: the forward pass and the loss as built; 02-joint: with autograd's backward and the SGD update.
    nn::LeNetGraphOptions forward_only = gopt;
    forward_only.backward = false;
    const auto report = dump::dump_pipeline(opt.dump_dir, nn::build_lenet_graph(forward_only), &step_graph,
                                                {.target = device->info(), .tuning = &choices});
    fmt::print(log, "{}", dump::dump_summary(report, opt.dump_dir));
  }
  auto t0 = Clock::now();
  lowering::CompileOptions step_options = lenet_step_compile_options(&choices, opt.steps_in_flight);
  lowering::CompileOptions forward_options = lenet_forward_compile_options(&choices);
  step_options.precision = forward_options.precision = opt.precision;
  auto step = lowering::compile(step_graph, *device, step_options);
  auto forward = lowering::compile(forward_graph, *device, forward_options);
  if (const std::string note = step->precision_note(); !note.empty()) fmt::print(log, "note: {}\n", note);
  fmt::print(log, "compiled the training step and the test forward pass in {:.2f} s\n",
             std::chrono::duration<double>(Clock::now() - t0).count());

  for (const auto& [name, t] : params) step->set(name, t);

  std::vector<EpochReport> reports;
  std::vector<float> x;
  std::vector<int32_t> y;
  for (int epoch = 1; epoch <= opt.epochs; ++epoch) {
    batches.shuffle(opt.seed, epoch);
    ProgressBar bar(fmt::format("epoch {}/{}", epoch, opt.epochs), uint64_t(batches.batches_per_epoch() * opt.batch), log);
    double loss_sum = 0;
    float loss = 0;
    auto start = Clock::now();
    const int64_t n = batches.batches_per_epoch();
    // Up to steps_in_flight steps are submitted ahead of the wait for step b (two by default: step b + 1 is fed and
    // submitted before that wait, so the device runs the steps back to back, the host's wake-up, its reading of the
    // loss and its feeding and submit overlapping the next step's device time). Each minibatch after the first is
    // prepared while the device runs the step before it.
    int64_t started = 0;
    batches.fill(0, x, y);
    for (int64_t b = 0; b < n; ++b) {
      while (started < n && started < b + opt.steps_in_flight) {
        step->set_raw("x", x.data(), x.size() * sizeof(float));
        step->set_raw("y", y.data(), y.size() * sizeof(int32_t));
        step->start_step();
        if (++started < n) batches.fill(started, x, y);
      }
      step->finish_step();  // step b's
      step->get_raw("loss", &loss, sizeof(float));
      if (!std::isfinite(loss))
        throw std::runtime_error(fmt::format("the loss became {} at epoch {}, batch {}: lower --lr", loss, epoch, b));
      loss_sum += loss;
      if (opt.progress) bar.update(uint64_t((b + 1) * opt.batch), fmt::format("loss {:.4f}", loss_sum / double(b + 1)));
    }
    EpochReport r;
    r.epoch = epoch;
    r.train_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.mean_loss = loss_sum / double(batches.batches_per_epoch());
    r.images_per_second = double(batches.batches_per_epoch() * opt.batch) / r.train_seconds;
    if (opt.progress) bar.finish(fmt::format("loss {:.4f}", r.mean_loss));
    for (const auto& p : nn::make_lenet().parameters()) forward->set(p.name, step->get(p.name));
    r.test_accuracy = test_accuracy(*forward, test, opt.eval_batch, opt.pixel_mean, opt.pixel_std);
    fmt::print(log, "epoch {}: loss {:.4f}, test accuracy {:.2f}%, {:.3f} s ({:.0f} images/s)\n", epoch, r.mean_loss,
               100 * r.test_accuracy, r.train_seconds, r.images_per_second);
    reports.push_back(r);
  }
  if (!opt.save.empty()) {
    io::NamedTensors params;
    for (const auto& p : nn::make_lenet().parameters()) params.emplace_back(p.name, step->get(p.name));
    io::save_tensors(opt.save, params, {{"model", "lenet"}, {"trained_on", device->info().id}});
    fmt::print(log, "saved the parameters to {}\n", opt.save);
  }
  return reports;
}

double eval_lenet(const EvalOptions& opt, std::FILE* log) {
  if (opt.load.empty()) throw std::invalid_argument("--load W.safetensors is required");
  auto params = initial_parameters(opt.load, 0);
  io::FashionMnist test = io::load_fashion_mnist(opt.data_dir, io::Split::Test);
  check_eval_batch(opt.eval_batch, test);
  auto device = rt::open_device(opt.device);
  auto forward = lowering::compile(lenet_forward_graph(opt.eval_batch), *device, lenet_forward_compile_options());
  for (const auto& [name, t] : params) forward->set(name, t);
  double acc = test_accuracy(*forward, test, opt.eval_batch, opt.pixel_mean, opt.pixel_std);
  fmt::print(log, "device {}: test accuracy {:.2f}% ({} images)\n", device->info().id, 100 * acc, test.images.count);
  return acc;
}

}  // namespace spire::training
