// Reductions: sum, mean and max over a set of axes (keepdim or not), sum_to, the adjoint of broadcasting,
// and the log-sum-exp of one row. Each walks its input once in row-major order and accumulates into the output element the
// input element maps to; accumulation is in double whatever the compute precision.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ir/graph/eval_ops.h"

namespace spire::graph::eval {

namespace {

// For every input element, where it lands in the output: strides over the input's dimensions that address the
// output (row-major in the output), with 0 on the reduced axes. Dropping keepdim's size-1 axes does not
// change the output's flat layout, so one mapping serves both forms.
std::vector<int64_t> reduced_strides(const Node& n, const Shape& in, const std::vector<int64_t>& axes) {
  Shape kept = in;
  std::vector<char> reduced(in.size(), 0);
  for (int64_t a : axes) {
    if (a < 0 || a >= int64_t(in.size()))
      fail(n, fmt::format("axis {} out of range for an input of rank {}", a, in.size()));
    reduced[size_t(a)] = 1;
    kept[size_t(a)] = 1;
  }
  std::vector<int64_t> strides = row_major_strides(kept);
  for (size_t d = 0; d < in.size(); ++d)
    if (reduced[d]) strides[d] = 0;
  return strides;
}

}  // namespace

Tensor reduce(const Node& n, Inputs in) {
  const Tensor& x = *in[0];
  const std::vector<int64_t>& axes = n.attrs.get_ints("axes");
  const std::vector<int64_t> to_out = reduced_strides(n, x.shape, axes);
  Tensor out = result_of(n);
  int64_t reduced_count = 1;
  for (int64_t a : axes) reduced_count *= x.shape[size_t(a)];
  if (out.numel() * reduced_count != x.numel())
    fail(n, fmt::format("result {} does not match reducing {} over axes [{}]", n.type.to_string(),
                        x.type().to_string(), fmt::join(axes, ",")));

  double* po = out.data.data();
  const double* px = x.data.data();
  switch (n.op) {
    case OpKind::Sum:
    case OpKind::Mean:
      for_each_index<1>(x.shape, {&to_out}, [&](int64_t i, const std::array<int64_t, 1>& o) { po[o[0]] += px[i]; });
      // Mean over an empty axis is 0/0 = NaN, as in PyTorch.
      if (n.op == OpKind::Mean)
        for (double& v : out.data) v /= double(reduced_count);
      return out;
    case OpKind::Max:
      if (reduced_count == 0 && out.numel() > 0) fail(n, "max over an empty axis has no identity");
      for (double& v : out.data) v = -std::numeric_limits<double>::infinity();
      // NaN propagates (PyTorch's max does): once NaN, `v > acc` is false for ever after.
      for_each_index<1>(x.shape, {&to_out}, [&](int64_t i, const std::array<int64_t, 1>& o) {
        const double v = px[i];
        double& acc = po[o[0]];
        if (std::isnan(v) || v > acc) acc = v;
      });
      return out;
    default: fail(n, "not a reduction op");
  }
}

Tensor sum_to(const Node& n, Inputs in) {
  const Tensor& x = *in[0];
  Tensor out = result_of(n);
  if (out.shape.size() > x.shape.size() || broadcast_shapes(out.shape, x.shape) != x.shape)
    fail(n, fmt::format("cannot sum {} to {}: the target does not broadcast to the input", x.type().to_string(),
                        shape_to_string(out.shape)));
  // The target's strides seen from the input: 0 along every broadcast dimension, so those are summed.
  const std::vector<int64_t> to_out = broadcast_strides(out.shape, x.shape);
  double* po = out.data.data();
  const double* px = x.data.data();
  for_each_index<1>(x.shape, {&to_out}, [&](int64_t i, const std::array<int64_t, 1>& o) { po[o[0]] += px[i]; });
  return out;
}

RowLogSumExp row_log_sum_exp(const double* row, int64_t length, int64_t stride) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < length; ++i) {
    const double v = row[i * stride];
    if (v > m || std::isnan(v)) m = v;
  }
  double sum = 0;
  for (int64_t i = 0; i < length; ++i) sum += std::exp(row[i * stride] - m);
  return {m, std::log(sum)};
}

}  // namespace spire::graph::eval
