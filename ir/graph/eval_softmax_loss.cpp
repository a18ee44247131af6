// softmax and log_softmax along one axis, cross_entropy with integer labels and its gradient. All subtract
// the row maximum before exponentiating (PyTorch does the same), so large logits neither overflow nor lose
// the small terms.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ir/graph/eval_ops.h"

namespace spire::graph::eval {

namespace {

// A row of `length` values spaced `stride` apart: its maximum (NaN if any is NaN) and the log of the sum of
// exp(v - max).
struct RowStats {
  double max;
  double log_sum;
};

RowStats row_stats(const double* row, int64_t length, int64_t stride) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < length; ++i) {
    const double v = row[i * stride];
    if (v > m || std::isnan(v)) m = v;
  }
  double sum = 0;
  for (int64_t i = 0; i < length; ++i) sum += std::exp(row[i * stride] - m);
  return {m, std::log(sum)};
}

// Checks cross_entropy's inputs and returns (N, C).
std::pair<int64_t, int64_t> check_logits_labels(const Node& n, const Tensor& logits, const Tensor& labels) {
  if (logits.rank() != 2 || labels.rank() != 1 || labels.shape[0] != logits.shape[0])
    fail(n, fmt::format("expects logits [N,C] and labels [N], got {} and {}", logits.type().to_string(),
                        labels.type().to_string()));
  if (!is_int(labels.dtype)) fail(n, "labels must be i32 or i64, got " + labels.type().to_string());
  const int64_t rows = logits.shape[0], classes = logits.shape[1];
  for (int64_t i = 0; i < rows; ++i) {
    const double label = labels.data[size_t(i)];
    if (!(label >= 0 && label < double(classes)) || label != std::trunc(label))
      fail(n, fmt::format("label {} of sample {} is out of range for {} classes (expected 0..{})", label, i,
                          classes, classes - 1));
  }
  return {rows, classes};
}

}  // namespace

Tensor softmax(const Node& n, Inputs in) {
  const Tensor& x = *in[0];
  int64_t axis = n.attrs.get_int("axis");
  if (axis < 0) axis += x.rank();
  if (axis < 0 || axis >= x.rank()) fail(n, fmt::format("axis {} out of range for {}", axis, x.type().to_string()));
  // View x as [outer, length, inner]; each (outer, inner) pair is one row along the axis.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[size_t(d)];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape[size_t(d)];
  const int64_t length = x.shape[size_t(axis)];
  const bool log_form = n.op == OpKind::LogSoftmax;

  Tensor y = result_of(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t start = o * length * inner + i;
      const double* row = x.data.data() + start;
      double* out = y.data.data() + start;
      const RowStats s = row_stats(row, length, inner);
      for (int64_t k = 0; k < length; ++k) {
        const double shifted = row[k * inner] - s.max;
        out[k * inner] = log_form ? shifted - s.log_sum : std::exp(shifted - s.log_sum);
      }
    }
  return y;
}

Tensor cross_entropy(const Node& n, Inputs in) {
  const Tensor& logits = *in[0];
  const Tensor& labels = *in[1];
  const auto [rows, classes] = check_logits_labels(n, logits, labels);
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const double* row = logits.data.data() + i * classes;
    const RowStats s = row_stats(row, classes, 1);
    const int64_t label = int64_t(labels.data[size_t(i)]);
    total += -(row[label] - s.max - s.log_sum);
  }
  Tensor loss = result_of(n);
  loss.data[0] = total / double(rows);  // an empty batch gives 0/0 = NaN, as PyTorch's mean reduction does
  return loss;
}

Tensor cross_entropy_grad(const Node& n, Inputs in) {
  const Tensor& grad = *in[0];
  const Tensor& logits = *in[1];
  const Tensor& labels = *in[2];
  if (grad.numel() != 1) fail(n, "the incoming gradient must be a scalar, got " + grad.type().to_string());
  const auto [rows, classes] = check_logits_labels(n, logits, labels);
  Tensor g = result_of(n);
  const double scale = grad.data[0] / double(rows);
  for (int64_t i = 0; i < rows; ++i) {
    const double* row = logits.data.data() + i * classes;
    double* out = g.data.data() + i * classes;
    const RowStats s = row_stats(row, classes, 1);
    const int64_t label = int64_t(labels.data[size_t(i)]);
    for (int64_t k = 0; k < classes; ++k)
      out[k] = scale * (std::exp(row[k] - s.max - s.log_sum) - (k == label ? 1.0 : 0.0));
  }
  return g;
}

}  // namespace spire::graph::eval
