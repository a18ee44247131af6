// Trains and evaluates the seed article's LeNet on Fashion-MNIST on any device: one compiled graph is one
// full training step (forward, cross-entropy, backward, SGD with momentum), replayed every minibatch, with
// the parameters and momentum buffers resident on the device.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "io/idx.h"
#include "ir/graph/graph.h"
#include "lowering/executable.h"

namespace spire::training {

struct TrainOptions {
  std::string device;           // "" = the best device present
  int epochs = 5;
  int64_t batch = 64;
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;
  uint64_t seed = 0;            // parameter initialisation and shuffling
  int64_t limit = 0;            // use the first N training images (0 = all 60000)
  std::string load;             // safetensors with PyTorch's parameter names to start from
  std::string save;             // where to write the trained parameters
  std::string data_dir = std::string(io::kFashionMnistDir);
  int64_t eval_batch = 500;     // batch of the test-set forward graph (must divide 10000)
  // Steps submitted before the host waits for the oldest (lowering::CompileOptions::steps_in_flight): with 2 the
  // device runs the epoch's steps back to back. Same results with any value.
  int steps_in_flight = 2;
  bool progress = true;
  std::string dump_dir;         // non-empty: write every stage of the training step there (dump/dump.h)
  std::string relu_op = "relu"; // the op of LeNet's ReLUs: a custom op's name trains with it (--relu)
  bool tune = false;            // tune the step's and the test pass's kernels first (tuning/tuning_setup.h)
  std::string tuning_cache;     // the tuning cache file ("": the default, tuning/tuning_cache.h)
  // Pixels fed as (p/255 - pixel_mean) / pixel_std: by default ToTensor then Normalize((0.5,), (0.5,)), i.e.
  // [-1, 1]. Measured on the H100/H200 (docs/PERFORMANCE.md): it learns faster in a short run than [0, 1]
  // and ends 5 epochs at 88.0-88.7% over seeds 0-3.
  float pixel_mean = 0.5f;
  float pixel_std = 0.5f;
  // The precision policy of the step and the test pass (lowering::CompileOptions::precision): fp32 unless asked.
  Precision precision = Precision::Fp32;
};

struct EpochReport {
  int epoch = 0;
  double mean_loss = 0;         // over the epoch's minibatches
  double test_accuracy = 0;     // fraction of the 10000 test images classified right
  double train_seconds = 0;     // wall time of the epoch's training steps (data preparation included)
  double images_per_second = 0;
};

// The forward pass alone, for the test set: x [batch,1,28,28] -> logits [batch,10].
graph::Graph lenet_forward_graph(int64_t batch, const std::string& relu_op = "relu");

// How the training step and the test-set forward pass are compiled: what they take and give every minibatch is
// streamed (x and y in, the loss out; x in, the logits out), so each minibatch costs one submit and one wait
// instead of a round trip per transfer (lowering/executable.h). The tests hold a step to that.
lowering::CompileOptions lenet_step_compile_options(const lowering::TuningChoices* tuning = nullptr,
                                                    int steps_in_flight = 2);
lowering::CompileOptions lenet_forward_compile_options(const lowering::TuningChoices* tuning = nullptr);

// Prints progress and one line per epoch to `log`; returns the per-epoch figures.
std::vector<EpochReport> train_lenet(const TrainOptions& opt, std::FILE* log = stderr);

struct EvalOptions {
  std::string device;
  std::string load;             // required: the parameters to evaluate
  std::string data_dir = std::string(io::kFashionMnistDir);
  int64_t eval_batch = 500;
  float pixel_mean = 0.5f;      // must match how the weights were trained
  float pixel_std = 0.5f;
};

// Test-set accuracy of the given weights on the given device.
double eval_lenet(const EvalOptions& opt, std::FILE* log = stderr);

}  // namespace spire::training
