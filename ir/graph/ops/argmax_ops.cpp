// argmax along one axis, wholly defined here: shape rule, float64 reference, cost and tolerances. Its lowering is
// lowering/lower_argmax.cpp (kernels/argmax_kernel.h), its harness cases op_harness/cases_argmax.cpp; a decoder's
// next token (tools/spire/next_token.cpp) is one.
//
//   argmax(x; axis, keepdim, select_last_index)   i64 position of the largest element along axis
//
// The first of equal largest elements (the last with select_last_index, as ONNX's ArgMax); a NaN counts as larger
// than every number (torch.argmax), so a row holding one gives the position of its first (or last) NaN. Not
// differentiable: positions have no gradient.
#include "ir/graph/ops/common.h"
#include "ir/graph/shape_checks.h"
#include "base/axis_rows.h"

namespace spire::graph::ops {

namespace {

TensorType argmax_shape(const ShapeContext& c) {
  shape_checks::require_float(c, 0);
  const int64_t axis = c.attrs.get_int("axis");
  shape_checks::require_axis(c, 0, axis);
  Shape out;
  for (int64_t d = 0; d < c.inputs[0].rank(); ++d) {
    if (d != axis) out.push_back(c.inputs[0].shape[size_t(d)]);
    else if (c.attrs.get_bool("keepdim")) out.push_back(1);
  }
  if (c.inputs[0].shape[size_t(axis)] == 0) c.fail(fmt::format("an argmax along an empty axis of {}", c.describe_input(0)));
  return {DType::I64, out};
}

Tensor argmax_reference(const Node& n, eval::Inputs in) {
  const Tensor& x = *in[0];
  const int64_t axis = n.attrs.get_int("axis");
  const bool last = n.attrs.get_bool("select_last_index");
  const auto [outer, length, inner] = axis_rows(x.shape, axis, "argmax");
  Tensor y = eval::result_of(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const double* row = x.data.data() + o * length * inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < length; ++k) {
        const double v = row[k * inner], b = row[best * inner];
        const bool better = last ? (v >= b || std::isnan(v)) : (v > b || (std::isnan(v) && !std::isnan(b)));
        if (better) best = k;
      }
      y.data[size_t(o * inner + i)] = double(best);
    }
  return y;
}

// One comparison an element; every input element read once, one position written a row.
OpCost argmax_cost(const Node& n, std::span<const TensorType> in) { return {in[0].numel(), io_bytes(n, in)}; }

}  // namespace

std::vector<OpInfo> argmax_ops() {
  return {
      {.name = "argmax", .arity = 1,
       .attrs = {{"axis", K::Int}, {"keepdim", K::Bool}, {"select_last_index", K::Bool}},
       .category = OpCategory::Heavy, .shape = argmax_shape, .reference = argmax_reference,
       .forward = {0, 0, "positions, compared exactly: equal on every device"}, .backward = kCopy,
       .cost = argmax_cost},
  };
}

}  // namespace spire::graph::ops
