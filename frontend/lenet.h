// LeNet-5 as the seed article defines it, in one place: its modules, its parameters, its initial values,
// and the training-step graph built from them.
//
//   convnet = Sequential(Conv2d(1, 6, 5, padding=2), ReLU(), MaxPool2d(2), Conv2d(6, 16, 5, padding=2), ReLU(),
//                        MaxPool2d(2))
//   fc      = Sequential(Flatten(), Linear(16*7*7, 120), ReLU(), Linear(120, 84), ReLU(), Linear(84, 10))
//   logits  = fc(convnet(x)),  x [N, 1, 28, 28]
// Both convolutions pad by 2, so each keeps its input's size: 28x28 -> pool 14x14 -> 14x14 -> pool 7x7, and
// the classifier reads 16*7*7 = 784 features (fc.1.weight [120, 784]). An earlier spire LeNet left conv2
// unpadded (16*5*5 = 400 features); its weight files no longer load.
#pragma once

#include <cstdint>
#include <map>
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
  // convnet.0.weight [6,1,5,5], convnet.0.bias [6], convnet.3.*, fc.1.weight [120,784], fc.1.bias, fc.3.*, fc.5.*
  // (state_dict order).
  std::vector<ParameterSpec> parameters() const;
  std::string repr() const;  // PyTorch's print(model)
};

// `relu_op`: the op every ReLU() computes with ("relu", or a custom op's name; see nn::ReLU).
LeNet make_lenet(const std::string& relu_op = "relu");

struct LeNetGraphOptions {
  int64_t batch = 64;
  graph::DType dtype = graph::DType::F32;  // of x, the parameters and every float value (f32 or f64)
  bool backward = true;                    // false: only the forward pass and the loss (what autograd starts from)
  bool sgd = false;                        // append the optimizer step (one graph = one training step)
  autograd::SgdOptions sgd_options{.lr = 0.01, .momentum = 0.9, .weight_decay = 0.0};
  std::string relu_op = "relu";            // the op of every ReLU (a custom op's name: --relu custom)
};

// The training-step graph:
//   inputs      x [batch, 1, 28, 28] (dtype), y [batch] (i64 class indices)
//   parameters  as LeNet::parameters() names them
//   outputs     logits [batch, 10], loss (cross-entropy, mean over the batch), grad.<parameter> for each
//   with sgd:   state momentum.<parameter> and state updates writing the new parameters and buffers back
graph::Graph build_lenet_graph(const LeNetGraphOptions& options);

// PyTorch-default initial parameters (see nn/init.h) under PyTorch's names, in state_dict order.
NamedTensors lenet_initial_parameters(uint64_t seed, graph::DType dtype = graph::DType::F32);

// Parameters read from a weights file (`source` names it in messages), checked against LeNet's names and
// shapes and converted to `dtype`, in state_dict order; tensors LeNet does not use are ignored. A missing
// tensor or a wrong shape is refused naming the parameter and both shapes, because a file of another
// architecture (the earlier 400-feature LeNet's fc.1.weight [120, 400]) would otherwise fail far from here.
NamedTensors lenet_parameters_from(const std::map<std::string, graph::Tensor>& loaded, const std::string& source,
                                   graph::DType dtype = graph::DType::F32);

}  // namespace spire::nn
