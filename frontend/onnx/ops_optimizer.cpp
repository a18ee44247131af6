// The optimizers of the ai.onnx.preview.training domain: Adagrad, Momentum (standard and Nesterov) and Adam. Each
// updates n tensors at once: inputs R (the learning rate), T (the step count, known at import: it picks the first
// step's rule and the bias correction), then n each of X, G and the optimizer's states; outputs the new X's, then the
// new states. Pointwise ops only, the formulas of ONNX's own reference (onnx/backend/test/case/node/*.py).
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

// The inputs after R and T in `groups` groups of n; refuses a count that does not divide or tensors of other types.
struct Groups {
  int64_t n = 0;
  Value rate;    // R, a scalar
  int64_t step;  // T
  std::vector<std::vector<Value>> of;  // of[group][i]
};
Groups groups_of(NodeContext& c, int groups, int outputs) {
  Groups r;
  const int tensors = c.num_inputs() - 2;
  if (tensors < groups || tensors % groups != 0)
    c.refuse(fmt::format("{} inputs after R and T do not form {} groups", tensors, groups));
  r.n = tensors / groups;
  if (c.num_outputs() != outputs * r.n) c.refuse(fmt::format("{} outputs for {} tensors", c.num_outputs(), r.n));
  if (!graph::is_float(c.type(0).dtype) || c.type(0).numel() != 1) c.refuse("R must be one float");
  const auto t = c.require_ints(1, "T (the step count)");
  if (t.size() != 1) c.refuse("T must be one value");
  r.step = t[0];
  r.rate = c.g().reshape(c.value(0), {});
  for (int k = 0; k < groups; ++k) {
    r.of.emplace_back();
    for (int64_t i = 0; i < r.n; ++i) {
      const int at = 2 + k * int(r.n) + int(i);
      if (!graph::is_float(c.type(at).dtype) || c.type(at).shape != c.type(2 + int(i)).shape)
        c.refuse(fmt::format("input {} must be a float tensor shaped like its X", at));
      r.of.back().push_back(c.value(at));
    }
  }
  return r;
}

void adagrad(NodeContext& c) {
  auto& g = c.g();
  const Groups in = groups_of(c, 3, 2);
  const double decay = c.attr_float("decay_factor", 0), eps = c.attr_float("epsilon", 1e-6f),
               norm = c.attr_float("norm_coefficient", 0);
  const Value rate = g.div(in.rate, 1.0 + double(in.step) * decay);
  for (int64_t i = 0; i < in.n; ++i) {
    const Value x = in.of[0][size_t(i)], gr = g.add(g.mul(x, norm), in.of[1][size_t(i)]);
    const Value h = g.add(in.of[2][size_t(i)], g.mul(gr, gr));
    c.set_output(int(i), g.sub(x, g.div(g.mul(rate, gr), g.add(g.sqrt(h), eps))));
    c.set_output(int(in.n + i), h);
  }
}

void momentum(NodeContext& c) {
  auto& g = c.g();
  const Groups in = groups_of(c, 3, 2);
  for (const char* required : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!c.attr(required)) c.refuse(fmt::format("attribute {} is required", required));
  const double alpha = c.attr_float("alpha", 0), beta = c.attr_float("beta", 0), norm = c.attr_float("norm_coefficient", 0);
  const std::string mode = c.attr_string("mode", "");
  if (mode != "standard" && mode != "nesterov") c.refuse(fmt::format("mode '{}'", mode));
  const double first_beta = in.step > 0 ? beta : 1.0;  // the gradient's weight is 1 at the first step
  for (int64_t i = 0; i < in.n; ++i) {
    const Value x = in.of[0][size_t(i)], gr = g.add(g.mul(x, norm), in.of[1][size_t(i)]);
    const Value v = g.add(g.mul(in.of[2][size_t(i)], alpha), g.mul(gr, first_beta));
    const Value move = mode == "standard" ? v : g.add(gr, g.mul(v, alpha));
    c.set_output(int(i), g.sub(x, g.mul(in.rate, move)));
    c.set_output(int(in.n + i), v);
  }
}

void adam(NodeContext& c) {
  auto& g = c.g();
  const Groups in = groups_of(c, 4, 3);
  const double alpha = c.attr_float("alpha", 0.9f), beta = c.attr_float("beta", 0.999f), eps = c.attr_float("epsilon", 1e-6f),
               norm = c.attr_float("norm_coefficient", 0), post = c.attr_float("norm_coefficient_post", 0);
  // Bias correction from the second step on.
  const double t = double(in.step);
  const Value rate = in.step > 0 ? g.mul(in.rate, std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t))) : in.rate;
  for (int64_t i = 0; i < in.n; ++i) {
    const Value x = in.of[0][size_t(i)], gr = g.add(g.mul(x, norm), in.of[1][size_t(i)]);
    const Value v = g.add(g.mul(in.of[2][size_t(i)], alpha), g.mul(gr, 1 - alpha));
    const Value h = g.add(g.mul(in.of[3][size_t(i)], beta), g.mul(g.mul(gr, gr), 1 - beta));
    const Value x_new = g.sub(x, g.mul(rate, g.div(v, g.add(g.sqrt(h), eps))));
    c.set_output(int(i), post == 0 ? x_new : g.mul(x_new, 1 - post));
    c.set_output(int(in.n + i), v);
    c.set_output(int(2 * in.n + i), h);
  }
}

}  // namespace

void register_optimizer_ops(OpTable& t) {
  t[table_key(kTrainingDomain, "Adagrad")] = {adagrad, {}};
  t[table_key(kTrainingDomain, "Momentum")] = {momentum, {}};
  t[table_key(kTrainingDomain, "Adam")] = {adam, {}};
}

}  // namespace spire::onnx_import
