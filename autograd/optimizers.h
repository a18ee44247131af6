// Optimizer steps as graph ops, appended to the training graph so one graph is one full training step
// (forward, backward, update). Each update is registered as a state update of the graph: the executor
// writes the new parameter and optimizer-state values back after every step.
//
// Optimizer state lives in `state` leaves named after the parameter:
//   SGD:  momentum.<param>                                  (init 0)
//   Adam: adam.exp_avg.<param>, adam.exp_avg_sq.<param>     (init 0), adam.step (one counter, init 0)
#pragma once

#include <vector>

#include "ir/graph/graph.h"

namespace spire::autograd {

// torch.optim.SGD with dampening=0, nesterov=False, maximize=False:
//   d = grad + weight_decay * p            (if weight_decay != 0)
//   buf = momentum * buf + d; d = buf      (if momentum != 0)
//   p = p - lr * d
// PyTorch initialises buf to a copy of the first step's d. Here buf starts at 0 and the same formula runs
// on every step: with dampening 0, momentum * 0 + d == d exactly in IEEE arithmetic, so step 1 gives the
// same bits as PyTorch's copy with no step counter (only a -0 gradient becomes +0 in the buffer).
struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
};

// torch.optim.Adam (amsgrad=False, maximize=False, the single-tensor implementation):
//   step += 1
//   g = grad + weight_decay * p            (if weight_decay != 0; L2 as Adam, not AdamW)
//   m = m + (1 - beta1) * (g - m)          (PyTorch's lerp_, same rounding)
//   v = v * beta2 + (1 - beta2) * g * g    (PyTorch's mul_ then addcmul_)
//   bc1 = 1 - beta1^step, bc2 = 1 - beta2^step, step_size = lr / bc1
//   p = p - step_size * (m / (sqrt(v) / sqrt(bc2) + eps))
// PyTorch computes bc1, bc2, step_size and sqrt(bc2) in Python (double) and rounds them to the parameter's
// dtype when used. `scalar_dtype` = F64 does the same (scalar f64 ops, then a cast). F32 keeps the whole
// graph free of float64 (for devices without it) at the cost of ~1e-5 relative error in early steps:
// 1 - 0.999f^1 cancels catastrophically in float.
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  graph::DType scalar_dtype = graph::DType::F64;
};

// Appends one optimizer step for `params` (parameter leaves) given their gradients (same types), registers
// the state updates, and returns the new parameter values (named updated.<param>).
std::vector<graph::Value> sgd_step(graph::Graph& g, const std::vector<graph::Value>& params,
                                   const std::vector<graph::Value>& grads, const SgdOptions& opt);
std::vector<graph::Value> adam_step(graph::Graph& g, const std::vector<graph::Value>& params,
                                    const std::vector<graph::Value>& grads, const AdamOptions& opt);

}  // namespace spire::autograd
