// Gradient checking against central finite differences, on the float64 reference evaluator.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::autograd::testing {

// One input of the function under test: random uniform values in [lo, hi) (integers for int dtypes), and
// whether its gradient is checked.
struct InputSpec {
  std::string name;
  graph::DType dtype = graph::DType::F64;
  graph::Shape shape;
  double lo = -1.0;
  double hi = 1.0;
  bool differentiable = true;
  // Values at least this far from every multiple of `away_from` step (0 = no constraint): keeps inputs off
  // kinks (relu at 0) so the finite difference stays on one side.
  double min_abs = 0.0;
};

struct Tolerance {
  double h = 1e-6;     // finite-difference step
  double abs = 1e-7;
  double rel = 1e-6;
};

// Builds f(inputs) with `body`, forms the scalar loss = sum(f * r) for a random weight tensor r of f's
// shape (so every output element's gradient matters with a distinct weight), differentiates it with
// autograd::grad with respect to every differentiable input, and compares each gradient element with
// (loss(x + h e_i) - loss(x - h e_i)) / 2h, all in float64. Reports failures through GoogleTest and
// returns the number of gradient elements checked (so a caller can assert that something was checked).
int64_t check_gradients(const std::vector<InputSpec>& specs,
                        const std::function<graph::Value(graph::Graph&, const std::vector<graph::Value>&)>& body,
                        uint32_t seed, Tolerance tol = {});

// Random tensor of the spec (fixed seed).
graph::Tensor random_tensor(const InputSpec& spec, uint32_t seed);

}  // namespace spire::autograd::testing
