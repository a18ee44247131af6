// softmax and log_softmax along one axis, each wholly defined here: shape rule, VJP, float64 reference, cost
// and tolerances. Their lowering is lowering/lower_softmax.cpp (kernels/softmax_kernels.h), their harness cases
// op_harness/cases_softmax.cpp, and ONNX's Softmax and LogSoftmax map to them in frontend/onnx/ops_activation.cpp.
//
//   softmax(x; axis)       y = exp(x - max) / sum(exp(x - max)) along axis
//   log_softmax(x; axis)   y = x - max - log(sum(exp(x - max))) along axis
//
// The axis attribute is non-negative; a front end with negative axes normalizes them (graph text writes what
// the node holds). Neither op has an OpKind: nothing outside these files names them, so they are reached by name,
// g.op("softmax", {x}, {{"axis", 1}}).
#include "ir/graph/ops/common.h"
#include "ir/graph/shape_checks.h"
#include "base/axis_rows.h"

namespace spire::graph::ops {

namespace {

TensorType softmax_shape(const ShapeContext& c) {
  shape_checks::require_float(c, 0);
  shape_checks::require_axis(c, 0, c.attrs.get_int("axis"));
  return c.inputs[0];
}

// PyTorch's _softmax_backward_data: dx = (g - sum(g y, axis)) y
std::vector<Value> softmax_vjp(VjpContext& c) {
  Graph& g = c.g;
  const int64_t axis = g.node(c.out).attrs.get_int("axis");
  Value s = g.sum(g.mul(c.grad_out, c.out), {axis}, true);
  return {g.mul(g.sub(c.grad_out, s), c.out)};
}

// PyTorch's _log_softmax_backward_data: dx = g - exp(y) sum(g, axis)
std::vector<Value> log_softmax_vjp(VjpContext& c) {
  Graph& g = c.g;
  const int64_t axis = g.node(c.out).attrs.get_int("axis");
  Value s = g.sum(c.grad_out, {axis}, true);
  return {g.sub(c.grad_out, g.mul(g.exp(c.out), s))};
}

// Both references view x as [outer, length, inner]: each (outer, inner) pair is one row along the axis, shifted
// by its maximum before exponentiating (eval::row_log_sum_exp). `log_form` picks the result.
Tensor normalize_rows(const Node& n, eval::Inputs in, bool log_form) {
  const Tensor& x = *in[0];
  const int64_t axis = n.attrs.get_int("axis");
  if (axis < 0 || axis >= x.rank())
    eval::fail(n, fmt::format("axis {} out of range for {}", axis, x.type().to_string()));
  const auto [outer, length, inner] = axis_rows(x.shape, axis, graph::op_name(n.op));

  Tensor y = eval::result_of(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t start = o * length * inner + i;
      const double* row = x.data.data() + start;
      double* out = y.data.data() + start;
      const eval::RowLogSumExp s = eval::row_log_sum_exp(row, length, inner);
      for (int64_t k = 0; k < length; ++k) {
        const double shifted = row[k * inner] - s.max;
        out[k * inner] = log_form ? shifted - s.log_sum : std::exp(shifted - s.log_sum);
      }
    }
  return y;
}
Tensor softmax_reference(const Node& n, eval::Inputs in) { return normalize_rows(n, in, false); }
Tensor log_softmax_reference(const Node& n, eval::Inputs in) { return normalize_rows(n, in, true); }

// Per element: the row max, the subtraction, exp, the row sum and the division (log_softmax: the subtraction
// of the log-sum instead); the few per-row operations are left out.
OpCost softmax_cost(const Node& n, std::span<const TensorType> in) { return {5 * n.type.numel(), io_bytes(n, in)}; }

}  // namespace

std::vector<OpInfo> softmax_ops() {
  return {
      {.name = "softmax", .arity = 1, .attrs = {{"axis", K::Int}}, .category = OpCategory::Heavy,
       .autocast_f32 = true, .shape = softmax_shape, .vjp = softmax_vjp, .reference = softmax_reference, .forward = kLogSumExp,
       .backward = {2e-5, 1e-12, "softmax, then y * (g - sum(g * y)): a row sum and products"},
       .cost = softmax_cost},
      {.name = "log_softmax", .arity = 1, .attrs = {{"axis", K::Int}}, .category = OpCategory::Heavy,
       .autocast_f32 = true, .shape = softmax_shape, .vjp = log_softmax_vjp, .reference = log_softmax_reference, .forward = kLogSumExp,
       .backward = {2e-5, 1e-12, "exp of log_softmax and a row sum of the gradient"}, .cost = softmax_cost},
  };
}

}  // namespace spire::graph::ops
