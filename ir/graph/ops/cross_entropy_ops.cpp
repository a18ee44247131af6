// cross_entropy with integer labels and its gradient, each wholly defined here: shape rule, VJP, float64
// reference, cost and tolerances. Their lowering is lowering/lower_cross_entropy.cpp, their harness cases
// op_harness/cases_cross_entropy.cpp.
//
//   cross_entropy(logits [N,C] float, labels [N] i32/i64) -> scalar: mean over rows of -log_softmax[n, label]
//   cross_entropy_grad(grad scalar, logits, labels) -> [N,C]: grad * (exp(log_softmax(logits)) - one_hot) / N
//
// Neither has an OpKind: only these files name them (a model builds its loss with g.op("cross_entropy", ...)).
#include "ir/graph/ops/common.h"
#include "ir/graph/shape_checks.h"

namespace spire::graph::ops {

namespace {

using namespace shape_checks;

TensorType cross_entropy_shape(const ShapeContext& c) {
  require_float(c, 0);
  require_rank(c, 0, 2, "logits [N, C]");
  require_int(c, 1, "the labels");
  require_shape(c, 1, {c.inputs[0].shape[0]}, "one label per row of the logits");
  return {c.inputs[0].dtype, {}};
}

TensorType cross_entropy_grad_shape(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 1);
  require_shape(c, 0, {}, "the gradient of the scalar loss");
  require_rank(c, 1, 2, "logits [N, C]");
  require_int(c, 2, "the labels");
  require_shape(c, 2, {c.inputs[1].shape[0]}, "one label per row of the logits");
  return c.inputs[1];
}

// The labels get no gradient (they are integers).
std::vector<Value> cross_entropy_vjp(VjpContext& c) {
  const Node n = c.g.node(c.out);
  return {c.g.add_node(op_from_name("cross_entropy_grad").value(), {c.grad_out, n.inputs[0], n.inputs[1]}, {}),
          Value{}};
}

// Checks the references' inputs and returns (N, C).
std::pair<int64_t, int64_t> check_logits_labels(const Node& n, const Tensor& logits, const Tensor& labels) {
  if (logits.rank() != 2 || labels.rank() != 1 || labels.shape[0] != logits.shape[0])
    eval::fail(n, fmt::format("expects logits [N,C] and labels [N], got {} and {}", logits.type().to_string(),
                              labels.type().to_string()));
  if (!is_int(labels.dtype)) eval::fail(n, "labels must be i32 or i64, got " + labels.type().to_string());
  const int64_t rows = logits.shape[0], classes = logits.shape[1];
  for (int64_t i = 0; i < rows; ++i) {
    const double label = labels.data[size_t(i)];
    if (!(label >= 0 && label < double(classes)) || label != std::trunc(label))
      eval::fail(n, fmt::format("label {} of sample {} is out of range for {} classes (expected 0..{})", label, i,
                                classes, classes - 1));
  }
  return {rows, classes};
}

// Each row is shifted by its maximum before exponentiating (eval::row_log_sum_exp), as PyTorch does.
Tensor cross_entropy_reference(const Node& n, eval::Inputs in) {
  const Tensor& logits = *in[0];
  const Tensor& labels = *in[1];
  const auto [rows, classes] = check_logits_labels(n, logits, labels);
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const double* row = logits.data.data() + i * classes;
    const eval::RowLogSumExp s = eval::row_log_sum_exp(row, classes, 1);
    const int64_t label = int64_t(labels.data[size_t(i)]);
    total += -(row[label] - s.max - s.log_sum);
  }
  Tensor loss = eval::result_of(n);
  loss.data[0] = total / double(rows);  // an empty batch gives 0/0 = NaN, as PyTorch's mean reduction does
  return loss;
}

Tensor cross_entropy_grad_reference(const Node& n, eval::Inputs in) {
  const Tensor& grad = *in[0];
  const Tensor& logits = *in[1];
  const Tensor& labels = *in[2];
  if (grad.numel() != 1) eval::fail(n, "the incoming gradient must be a scalar, got " + grad.type().to_string());
  const auto [rows, classes] = check_logits_labels(n, logits, labels);
  Tensor g = eval::result_of(n);
  const double scale = grad.data[0] / double(rows);
  for (int64_t i = 0; i < rows; ++i) {
    const double* row = logits.data.data() + i * classes;
    double* out = g.data.data() + i * classes;
    const eval::RowLogSumExp s = eval::row_log_sum_exp(row, classes, 1);
    const int64_t label = int64_t(labels.data[size_t(i)]);
    for (int64_t k = 0; k < classes; ++k)
      out[k] = scale * (std::exp(row[k] - s.max - s.log_sum) - (k == label ? 1.0 : 0.0));
  }
  return g;
}

// log_softmax of the logits (5 per element: the row max, the subtraction, exp, the row sum, the log-sum's
// subtraction), then per row the label's entry negated and the mean over rows.
OpCost cross_entropy_cost(const Node& n, std::span<const TensorType> in) {
  return {5 * in[0].numel() + 2 * in[1].numel(), io_bytes(n, in)};
}
// The same 5 per element for the normalized row, minus the one-hot, times grad/N.
OpCost cross_entropy_grad_cost(const Node& n, std::span<const TensorType> in) {
  return {7 * n.type.numel(), io_bytes(n, in)};
}

}  // namespace

std::vector<OpInfo> cross_entropy_ops() {
  const OpCategory H = OpCategory::Heavy;
  return {
      {.name = "cross_entropy", .arity = 2, .category = H, .autocast_f32 = true, .shape = cross_entropy_shape, .vjp = cross_entropy_vjp,
       .reference = cross_entropy_reference, .forward = kLogSumExp, .backward = kLogSumExp,
       .cost = cross_entropy_cost},
      // Backward-only: not differentiable itself (no double backward).
      {.name = "cross_entropy_grad", .arity = 3, .category = H, .autocast_f32 = true, .shape = cross_entropy_grad_shape,
       .reference = cross_entropy_grad_reference, .forward = kLogSumExp, .backward = kLogSumExp,
       .cost = cross_entropy_grad_cost},
  };
}

}  // namespace spire::graph::ops
