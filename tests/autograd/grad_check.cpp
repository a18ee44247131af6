#include "tests/autograd/grad_check.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "autograd/grad.h"
#include "ir/graph/evaluator.h"

namespace spire::autograd::testing {

using graph::DType;
using graph::Graph;
using graph::Tensor;
using graph::Value;

Tensor random_tensor(const InputSpec& spec, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Tensor t(spec.dtype, spec.shape);
  if (graph::is_int(spec.dtype)) {
    std::uniform_int_distribution<int64_t> d(int64_t(spec.lo), int64_t(spec.hi) - 1);
    for (double& v : t.data) v = double(d(rng));
    return t;
  }
  std::uniform_real_distribution<double> d(spec.lo, spec.hi);
  for (double& v : t.data) {
    do v = d(rng);
    while (std::abs(v) < spec.min_abs);
  }
  return t.round_to_dtype();
}

int64_t check_gradients(const std::vector<InputSpec>& specs,
                        const std::function<Value(Graph&, const std::vector<Value>&)>& body, uint32_t seed,
                        Tolerance tol) {
  Graph g;
  std::vector<Value> inputs;
  std::map<std::string, Tensor> feed;
  for (size_t i = 0; i < specs.size(); ++i) {
    inputs.push_back(g.input(specs[i].name, specs[i].dtype, specs[i].shape));
    feed[specs[i].name] = random_tensor(specs[i], seed * 7919u + uint32_t(i));
  }
  Value f = body(g, inputs);
  const graph::TensorType ft = g.type(f);
  Value r = g.input("loss_weights", ft.dtype, ft.shape);
  feed["loss_weights"] = random_tensor({"loss_weights", ft.dtype, ft.shape, -1.0, 1.0}, seed * 104729u + 17u);
  Value loss = g.sum(g.mul(f, r));
  g.output("loss", loss);

  std::vector<Value> wrt;
  std::vector<size_t> wrt_spec;
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].differentiable) {
      wrt.push_back(inputs[i]);
      wrt_spec.push_back(i);
    }
  std::vector<Value> grads = autograd::grad(g, loss, wrt);
  for (size_t k = 0; k < grads.size(); ++k) g.output("grad." + specs[wrt_spec[k]].name, grads[k]);

  std::map<std::string, Tensor> result = graph::evaluate(g, feed, DType::F64);
  int64_t checked = 0;
  for (size_t k = 0; k < grads.size(); ++k) {
    const InputSpec& spec = specs[wrt_spec[k]];
    const Tensor& analytic = result.at("grad." + spec.name);
    EXPECT_EQ(analytic.shape, spec.shape) << spec.name;
    for (int64_t e = 0; e < analytic.numel(); ++e) {
      std::map<std::string, Tensor> plus = feed, minus = feed;
      plus[spec.name][e] += tol.h;
      minus[spec.name][e] -= tol.h;
      double lp = graph::evaluate(g, plus, DType::F64).at("loss")[0];
      double lm = graph::evaluate(g, minus, DType::F64).at("loss")[0];
      double numeric = (lp - lm) / (2 * tol.h);
      double a = analytic[e];
      EXPECT_NEAR(a, numeric, tol.abs + tol.rel * std::max(std::abs(a), std::abs(numeric)))
          << "d loss / d " << spec.name << "[" << e << "] (seed " << seed << ")";
      ++checked;
    }
  }
  return checked;
}

}  // namespace spire::autograd::testing
