// LeNet-5 as the seed article defines it, in one place: its modules, its parameters, its initial values,
// and the training-step graph built from them.
//
//   convnet = Sequential(Conv2d(1, 6, 5, padding=2), ReLU(), MaxPool2d(2), Conv2d(6, 16, 5), ReLU(), MaxPool2d(2))
//   fc      = Sequential(Flatten(), Linear(16*5*5, 120), ReLU(), Linear(120, 84), ReLU(), Linear(84, 10))
//   logits  = fc(convnet(x)),  x [N, 1, 28, 28]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/optimizers.h"
#include "frontend/nn/layers.h"

namespace spire::nn {

struct LeNet {
  Sequential convnet;
  Sequential fc;

  // Appends the forward pass under parameter names "convnet.*" and "fc.*"; returns logits [N, 10].
  graph::Value forward(const Scope& s, graph::Value x) const;
  // convnet.0.weight [6,1,5,5], convnet.0.bias [6], convnet.3.*, fc.1.*, fc.3.*, fc.5.* (state_dict order).
  std::vector<ParameterSpec> parameters() const;
  std::string repr() const;  // PyTorch's print(model)
};

LeNet make_lenet();

struct LeNetGraphOptions {
  int64_t batch = 64;
  graph::DType dtype = graph::DType::F32;  // of x, the parameters and every float value (f32 or f64)
  bool sgd = false;                        // append the optimizer step (one graph = one training step)
  autograd::SgdOptions sgd_options{.lr = 0.01, .momentum = 0.9, .weight_decay = 0.0};
};

// The training-step graph:
//   inputs      x [batch, 1, 28, 28] (dtype), y [batch] (i64 class indices)
//   parameters  as LeNet::parameters() names them
//   outputs     logits [batch, 10], loss (cross-entropy, mean over the batch), grad.<parameter> for each
//   with sgd:   state momentum.<parameter> and state updates writing the new parameters and buffers back
graph::Graph build_lenet_graph(const LeNetGraphOptions& options);

// PyTorch-default initial parameters (see nn/init.h) under PyTorch's names, in state_dict order.
NamedTensors lenet_initial_parameters(uint64_t seed, graph::DType dtype = graph::DType::F32);

}  // namespace spire::nn
