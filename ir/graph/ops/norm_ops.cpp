// layer_norm and rms_norm over the last axis, each wholly defined here: shape rule, VJP, float64 reference, cost and
// tolerances. Their lowering is lowering/lower_norm.cpp (kernels/norm_kernels.h), their harness cases
// op_harness/cases_norm.cpp. passes/fuse_norms.h finds them in the graphs front ends import (ONNX's opset < 17
// LayerNormalization is a chain of ReduceMean, Sub, Pow, Sqrt and Div; a Llama's RMSNorm one of Pow, ReduceMean and
// Sqrt), and ONNX's LayerNormalization maps to layer_norm in frontend/onnx/ops_nn.cpp.
//
//   layer_norm(x, scale, bias; epsilon)  y = (x - mean) / sqrt(var + epsilon) * scale + bias
//   rms_norm(x, scale; epsilon)          y = x / sqrt(mean(x^2) + epsilon) * scale
//
// mean and var (the biased variance, as PyTorch's) are over x's last axis; scale and bias are vectors of its length.
#include <cmath>

#include "ir/graph/ops/common.h"
#include "ir/graph/shape_checks.h"

namespace spire::graph::ops {

namespace {

TensorType norm_shape(const ShapeContext& c) {
  shape_checks::require_float(c, 0);
  const TensorType& x = c.inputs[0];
  if (x.rank() < 1) c.fail(fmt::format("needs at least one axis, got {}", c.describe_input(0)));
  for (size_t i = 1; i < c.inputs.size(); ++i)
    if (c.inputs[i].shape != Shape{x.shape.back()} || c.inputs[i].dtype != x.dtype)
      c.fail(fmt::format("{} must be a vector of x's last axis ({} {} elements)", c.describe_input(i),
                         dtype_name(x.dtype), x.shape.back()));
  return x;
}

bool centered(const Node& n) { return op_name(n.op) == "layer_norm"; }

// With L the last axis's length, r = 1 / sqrt(var + eps) and xh = (x - mean) r (rms_norm: r = 1 / sqrt(mean(x^2) +
// eps), xh = x r), g' = g scale:
//   layer_norm: dx = r (g' - mean(g') - xh mean(g' xh)),  dscale = sum over rows of g xh,  dbias = sum over rows of g
//   rms_norm:   dx = r (g' - xh mean(g' xh)),             dscale = sum over rows of g xh
// (PyTorch's native_layer_norm_backward and the RMSNorm derivative), from ordinary ops.
std::vector<Value> norm_vjp(VjpContext& c) {
  Graph& g = c.g;
  const Node& n = g.node(c.out);  // (a reference the ops added below may move: read what it holds first)
  const bool center = centered(n);
  const std::vector<Value> inputs = n.inputs;
  const double epsilon = n.attrs.get_float("epsilon");
  const Value x = inputs[0], scale = inputs[1];
  const TensorType xt = g.type(x);
  const int64_t last = xt.rank() - 1;
  const Value eps = g.scalar(epsilon, xt.dtype);
  const Value centred = center ? g.sub(x, g.mean(x, {last}, true)) : x;
  const Value second_moment = g.mean(g.mul(centred, centred), {last}, true);
  const Value r = g.div(g.scalar(1.0, xt.dtype), g.sqrt(g.add(second_moment, eps)));
  const Value xh = g.mul(centred, r);
  std::vector<Value> grads(inputs.size());
  if (c.wants(0)) {
    const Value gs = g.mul(c.grad_out, scale);
    Value inner = g.sub(gs, g.mul(xh, g.mean(g.mul(gs, xh), {last}, true)));
    if (center) inner = g.sub(inner, g.mean(gs, {last}, true));
    grads[0] = g.mul(r, inner);
  }
  if (c.wants(1)) grads[1] = g.sum_to(g.mul(c.grad_out, xh), g.type(scale).shape);
  if (center && c.wants(2)) grads[2] = g.sum_to(c.grad_out, g.type(inputs[2]).shape);
  return grads;
}

Tensor norm_reference(const Node& n, eval::Inputs in) {
  const Tensor& x = *in[0];
  const Tensor& scale = *in[1];
  const bool center = centered(n);
  const double eps = n.attrs.get_float("epsilon");
  const int64_t L = x.shape.back(), rows = x.numel() / std::max<int64_t>(L, 1);
  Tensor y = eval::result_of(n);
  for (int64_t row = 0; row < rows; ++row) {
    const double* v = x.data.data() + row * L;
    double mean = 0;
    if (center) {
      for (int64_t i = 0; i < L; ++i) mean += v[i];
      mean /= double(L);
    }
    double moment = 0;
    for (int64_t i = 0; i < L; ++i) moment += (v[i] - mean) * (v[i] - mean);
    const double r = 1.0 / std::sqrt(moment / double(L) + eps);
    for (int64_t i = 0; i < L; ++i)
      y.data[size_t(row * L + i)] = (v[i] - mean) * r * scale.data[size_t(i)] + (center ? in[2]->data[size_t(i)] : 0.0);
  }
  return y;
}

// Per element: the sums of x and of its squared deviation, the subtraction, the scaling and the affine map.
OpCost norm_cost(const Node& n, std::span<const TensorType> in) { return {7 * n.type.numel(), io_bytes(n, in)}; }

constexpr Tolerance kNormForward{2e-5, 1e-12,
                                 "two row sums (the mean and the second moment) and a square root: a few ulp of each, "
                                 "scaled by the deviation over the standard deviation"};
constexpr Tolerance kNormBackward{5e-5, 1e-11,
                                  "the forward statistics again, and two more row means of products of the gradient"};

}  // namespace

std::vector<OpInfo> norm_ops() {
  return {
      {.name = "layer_norm", .arity = 3, .attrs = {{"epsilon", K::Float}}, .category = OpCategory::Heavy,
       .autocast_f32 = true, .shape = norm_shape, .vjp = norm_vjp, .reference = norm_reference, .forward = kNormForward,
       .backward = kNormBackward, .cost = norm_cost},
      {.name = "rms_norm", .arity = 2, .attrs = {{"epsilon", K::Float}}, .category = OpCategory::Heavy,
       .autocast_f32 = true, .shape = norm_shape, .vjp = norm_vjp, .reference = norm_reference, .forward = kNormForward,
       .backward = kNormBackward, .cost = norm_cost},
  };
}

}  // namespace spire::graph::ops
