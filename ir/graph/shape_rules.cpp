// Shape rules: from input types and attributes to the result type, or a GraphError that names the op, the
// node, the offending input and the shapes.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "ir/graph/op_table.h"
#include "ir/graph/shape_checks.h"

namespace spire::graph {

void ShapeContext::fail(const std::string& message) const {
  if (node_name.empty()) throw GraphError(fmt::format("{}: {}", op_name(op), message));
  throw GraphError(fmt::format("{} '{}': {}", op_name(op), node_name, message));
}

std::string ShapeContext::describe_input(size_t i) const {
  return fmt::format("input {} ({})", i, inputs[i].to_string());
}

namespace shape_rules {
namespace {

using namespace shape_checks;

Shape broadcast_or_fail(const ShapeContext& c, const Shape& a, size_t ia, const Shape& b, size_t ib) {
  auto s = broadcast_shapes(a, b);
  if (!s) c.fail(fmt::format("cannot broadcast {} with {}", c.describe_input(ia), c.describe_input(ib)));
  return *s;
}

}  // namespace

TensorType binary(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_numeric(c, 0);
  return {c.inputs[0].dtype, broadcast_or_fail(c, c.inputs[0].shape, 0, c.inputs[1].shape, 1)};
}

TensorType binary_float(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 0);
  return {c.inputs[0].dtype, broadcast_or_fail(c, c.inputs[0].shape, 0, c.inputs[1].shape, 1)};
}

TensorType compare(const ShapeContext& c) {
  const std::string& mode = c.attrs.get_string("mode");
  if (!compare_mode_from_name(mode))
    c.fail(fmt::format("attribute mode must be one of lt, le, gt, ge, eq, ne; got '{}'", mode));
  require_same_dtype(c, 0, 1);
  return {DType::Bool, broadcast_or_fail(c, c.inputs[0].shape, 0, c.inputs[1].shape, 1)};
}

TensorType unary_float(const ShapeContext& c) {
  require_float(c, 0);
  return c.inputs[0];
}

TensorType unary_numeric(const ShapeContext& c) {
  require_numeric(c, 0);
  return c.inputs[0];
}

TensorType where(const ShapeContext& c) {
  if (c.inputs[0].dtype != DType::Bool) c.fail(fmt::format("{} (the condition) must be bool", c.describe_input(0)));
  require_same_dtype(c, 1, 2);
  Shape s = broadcast_or_fail(c, c.inputs[0].shape, 0, c.inputs[1].shape, 1);
  auto all = broadcast_shapes(s, c.inputs[2].shape);
  if (!all)
    c.fail(fmt::format("cannot broadcast {} with the broadcast of inputs 0 and 1 ({})", c.describe_input(2),
                       shape_to_string(s)));
  return {c.inputs[1].dtype, *all};
}

TensorType cast(const ShapeContext& c) {
  const std::string& to = c.attrs.get_string("to");
  auto t = dtype_from_name(to);
  if (!t) c.fail(fmt::format("attribute to must be a dtype (bool, i32, i64, f32, f64, f16, bf16); got '{}'", to));
  return {*t, c.inputs[0].shape};
}

TensorType reduce(const ShapeContext& c) {
  if (c.op == OpKind::Mean) require_float(c, 0);
  else require_numeric(c, 0);
  const auto& axes = c.attrs.get_ints("axes");
  bool keepdim = c.attrs.get_bool("keepdim");
  const Shape& in = c.inputs[0].shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    require_axis(c, 0, axes[i]);
    if (i > 0 && axes[i] <= axes[i - 1])
      c.fail(fmt::format("attribute axes must be sorted and unique, got {}", shape_to_string(axes)));
    if (c.op == OpKind::Max && in[size_t(axes[i])] == 0)
      c.fail(fmt::format("max over the empty axis {} of {}", axes[i], c.describe_input(0)));
  }
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
    if (!reduced) out.push_back(in[d]);
    else if (keepdim) out.push_back(1);
  }
  return {c.inputs[0].dtype, out};
}

TensorType reshape(const ShapeContext& c) {
  Shape s = shape_attr(c, "shape");
  if (num_elements(s) != c.inputs[0].numel())
    c.fail(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", c.describe_input(0), c.inputs[0].numel(),
                       shape_to_string(s), num_elements(s)));
  return {c.inputs[0].dtype, s};
}

TensorType flatten(const ShapeContext& c) {
  int64_t start = c.attrs.get_int("start_dim"), end = c.attrs.get_int("end_dim");
  const Shape& in = c.inputs[0].shape;
  if (start < 0 || end < start || end >= int64_t(in.size()))
    c.fail(fmt::format("start_dim={} and end_dim={} must satisfy 0 <= start_dim <= end_dim < rank for {}", start, end,
                       c.describe_input(0)));
  Shape out(in.begin(), in.begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= in[size_t(d)];
  out.push_back(merged);
  out.insert(out.end(), in.begin() + end + 1, in.end());
  return {c.inputs[0].dtype, out};
}

TensorType permute(const ShapeContext& c) {
  const auto& perm = c.attrs.get_ints("perm");
  const Shape& in = c.inputs[0].shape;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(in.size());
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota)
    c.fail(fmt::format("attribute perm {} is not a permutation of the {} dims of {}", shape_to_string(perm), in.size(),
                       c.describe_input(0)));
  Shape out(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = in[size_t(perm[i])];
  return {c.inputs[0].dtype, out};
}

TensorType broadcast_to(const ShapeContext& c) {
  Shape s = shape_attr(c, "shape");
  auto b = broadcast_shapes(c.inputs[0].shape, s);
  if (!b || *b != s || c.inputs[0].rank() > int64_t(s.size()))
    c.fail(fmt::format("cannot broadcast {} to {}", c.describe_input(0), shape_to_string(s)));
  return {c.inputs[0].dtype, s};
}

TensorType sum_to(const ShapeContext& c) {
  require_numeric(c, 0);
  Shape s = shape_attr(c, "shape");
  auto b = broadcast_shapes(s, c.inputs[0].shape);
  if (!b || *b != c.inputs[0].shape || int64_t(s.size()) > c.inputs[0].rank())
    c.fail(fmt::format("cannot sum {} to {}: the target must broadcast to the input", c.describe_input(0),
                       shape_to_string(s)));
  return {c.inputs[0].dtype, s};
}

TensorType activation_grad(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  if (c.op != OpKind::ReluGrad) require_float(c, 0);
  else require_numeric(c, 0);
  require_shape(c, 0, c.inputs[1].shape, "the gradient has the activation's shape");
  return c.inputs[1];
}

}  // namespace shape_rules
}  // namespace spire::graph
