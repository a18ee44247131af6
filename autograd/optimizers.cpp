// SGD (with momentum and weight decay) and Adam as graph ops, following torch.optim's update order so the
// float rounding matches PyTorch's.
#include "autograd/optimizers.h"

#include <fmt/format.h>

namespace spire::autograd {

using graph::DType;
using graph::GraphError;
using graph::Graph;
using graph::Value;

namespace {

void check_params(const Graph& g, const std::vector<Value>& params, const std::vector<Value>& grads,
                  const char* who) {
  if (params.size() != grads.size())
    throw GraphError(fmt::format("{}: {} parameters but {} gradients", who, params.size(), grads.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    const graph::Node& p = g.node(params[i]);
    if (p.op != graph::OpKind::Parameter)
      throw GraphError(fmt::format("{}: '{}' is a {}, not a parameter", who, p.name, graph::op_name(p.op)));
    if (!graph::is_float(p.type.dtype))
      throw GraphError(fmt::format("{}: parameter '{}' of type {} is not float", who, p.name, p.type.to_string()));
    if (g.type(grads[i]) != p.type)
      throw GraphError(fmt::format("{}: gradient '{}' of '{}' has type {}, expected {}", who, g.node(grads[i]).name,
                                   p.name, g.type(grads[i]).to_string(), p.type.to_string()));
  }
}

// d = grad + weight_decay * param (torch: grad.add(param, alpha=weight_decay)).
Value with_weight_decay(Graph& g, Value p, Value grad, double weight_decay) {
  return weight_decay == 0.0 ? grad : g.add(grad, g.mul(p, weight_decay));
}

Value finish(Graph& g, Value p, Value p_new) {
  std::string name = "updated." + g.node(p).name;
  if (!g.find(name)) g.name(p_new, name);
  g.state_update(p, p_new);
  return p_new;
}

}  // namespace

std::vector<Value> sgd_step(Graph& g, const std::vector<Value>& params, const std::vector<Value>& grads,
                            const SgdOptions& opt) {
  check_params(g, params, grads, "sgd_step");
  std::vector<Value> out;
  for (size_t i = 0; i < params.size(); ++i) {
    Value p = params[i];
    const graph::TensorType type = g.type(p);
    Value d = with_weight_decay(g, p, grads[i], opt.weight_decay);
    if (opt.momentum != 0.0) {
      Value buf = g.state("momentum." + g.node(p).name, type.dtype, type.shape, 0.0);
      Value buf_new = g.add(g.mul(buf, opt.momentum), d);  // buf.mul_(momentum).add_(d)
      g.state_update(buf, buf_new);
      d = buf_new;
    }
    out.push_back(finish(g, p, g.sub(p, g.mul(d, opt.lr))));  // param.add_(d, alpha=-lr)
  }
  return out;
}

std::vector<Value> adam_step(Graph& g, const std::vector<Value>& params, const std::vector<Value>& grads,
                             const AdamOptions& opt) {
  check_params(g, params, grads, "adam_step");
  if (params.empty()) return {};
  if (!graph::is_float(opt.scalar_dtype))
    throw GraphError(fmt::format("adam_step: scalar_dtype must be f32 or f64, got {}", dtype_name(opt.scalar_dtype)));
  const DType dt = g.type(params[0]).dtype;
  for (Value p : params)
    if (g.type(p).dtype != dt)
      throw GraphError(fmt::format("adam_step: parameters of mixed dtypes ({} and {}); one step counter serves one dtype",
                                   dtype_name(dt), dtype_name(g.type(p).dtype)));

  // The step counter (a float like PyTorch's step tensor; exact up to 2^24 steps in f32).
  Value step = g.state("adam.step", dt, {}, 0.0);
  Value step_new = g.name(g.add(step, 1.0), "adam.step.next");
  g.state_update(step, step_new);

  // Bias corrections in scalar_dtype, then rounded to the parameters' dtype.
  const DType sdt = opt.scalar_dtype;
  auto to_param_dtype = [&](Value v) { return sdt == dt ? v : g.cast(v, dt); };
  Value t = sdt == dt ? step_new : g.cast(step_new, sdt);
  Value one = g.scalar(1.0, sdt);
  Value bc1 = g.sub(one, g.pow(g.scalar(opt.beta1, sdt), t));
  Value bc2 = g.sub(one, g.pow(g.scalar(opt.beta2, sdt), t));
  Value step_size = g.name(to_param_dtype(g.div(g.scalar(opt.lr, sdt), bc1)), "adam.step_size");
  Value bc2_sqrt = g.name(to_param_dtype(g.sqrt(bc2)), "adam.bias_correction2_sqrt");

  std::vector<Value> out;
  for (size_t i = 0; i < params.size(); ++i) {
    Value p = params[i];
    const graph::TensorType type = g.type(p);
    const std::string name = g.node(p).name;  // a copy: appending nodes moves node storage
    Value grad = with_weight_decay(g, p, grads[i], opt.weight_decay);
    Value m = g.state("adam.exp_avg." + name, dt, type.shape, 0.0);
    Value v = g.state("adam.exp_avg_sq." + name, dt, type.shape, 0.0);
    Value m_new = g.add(m, g.mul(g.sub(grad, m), 1.0 - opt.beta1));                   // exp_avg.lerp_(grad, 1-beta1)
    Value v_new = g.add(g.mul(v, opt.beta2), g.mul(g.mul(grad, 1.0 - opt.beta2), grad));  // mul_, addcmul_
    g.state_update(m, m_new);
    g.state_update(v, v_new);
    Value denom = g.add(g.div(g.sqrt(v_new), bc2_sqrt), opt.eps);
    out.push_back(finish(g, p, g.sub(p, g.mul(g.div(m_new, denom), step_size))));    // addcdiv_(-step_size)
  }
  return out;
}

}  // namespace spire::autograd
