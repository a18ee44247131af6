// Shape rules: from input types and attributes to the result type, or a GraphError that names the op, the
// node, the offending input and the shapes.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "ir/graph/op_table.h"

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

void require_float(const ShapeContext& c, size_t i) {
  if (!is_float(c.inputs[i].dtype)) c.fail(fmt::format("{} must be a float tensor (f32 or f64)", c.describe_input(i)));
}

void require_numeric(const ShapeContext& c, size_t i) {
  if (c.inputs[i].dtype == DType::Bool) c.fail(fmt::format("{} must be numeric, not bool", c.describe_input(i)));
}

void require_same_dtype(const ShapeContext& c, size_t i, size_t j) {
  if (c.inputs[i].dtype != c.inputs[j].dtype)
    c.fail(fmt::format("{} and {} have different dtypes (no implicit promotion; use cast)", c.describe_input(i),
                       c.describe_input(j)));
}

void require_rank(const ShapeContext& c, size_t i, int64_t rank, const char* layout) {
  if (c.inputs[i].rank() != rank)
    c.fail(fmt::format("{} must have rank {} ({})", c.describe_input(i), rank, layout));
}

Shape broadcast_or_fail(const ShapeContext& c, const Shape& a, size_t ia, const Shape& b, size_t ib) {
  auto s = broadcast_shapes(a, b);
  if (!s) c.fail(fmt::format("cannot broadcast {} with {}", c.describe_input(ia), c.describe_input(ib)));
  return *s;
}

// An ints attribute of exactly `n` entries, each >= `min`.
const std::vector<int64_t>& ints_attr(const ShapeContext& c, const char* name, size_t n, int64_t min) {
  const auto& v = c.attrs.get_ints(name);
  if (v.size() != n) c.fail(fmt::format("attribute {} must have {} entries, got {}", name, n, shape_to_string(v)));
  for (int64_t x : v)
    if (x < min) c.fail(fmt::format("attribute {} must be >= {} in every entry, got {}", name, min, shape_to_string(v)));
  return v;
}

// A shape attribute: every dimension >= 0.
Shape shape_attr(const ShapeContext& c, const char* name) {
  const auto& v = c.attrs.get_ints(name);
  for (int64_t d : v)
    if (d < 0) c.fail(fmt::format("attribute {} has a negative dimension: {}", name, shape_to_string(v)));
  return v;
}

// Output spatial size of a sliding window; fails when the window does not fit.
int64_t window_out(const ShapeContext& c, const char* what, int64_t in, int64_t k_eff, int64_t stride, int64_t pad) {
  int64_t span = in + 2 * pad - k_eff;
  if (span < 0)
    c.fail(fmt::format("{}: window of extent {} does not fit input size {} with padding {}", what, k_eff, in, pad));
  return span / stride + 1;
}

// conv2d's result shape from x and w shapes (x is input index ix, w index iw for messages).
Shape conv_out_shape(const ShapeContext& c, const Shape& x, const Shape& w, const std::string& x_desc,
                     const std::string& w_desc) {
  const auto& stride = ints_attr(c, "stride", 2, 1);
  const auto& padding = ints_attr(c, "padding", 2, 0);
  const auto& dilation = ints_attr(c, "dilation", 2, 1);
  int64_t groups = c.attrs.get_int("groups");
  if (groups < 1) c.fail(fmt::format("attribute groups must be >= 1, got {}", groups));
  if (x.size() != 4) c.fail(fmt::format("{} must have rank 4 ([N, Cin, H, W])", x_desc));
  if (w.size() != 4) c.fail(fmt::format("{} must have rank 4 ([Cout, Cin/groups, kh, kw])", w_desc));
  if (x[1] % groups != 0)
    c.fail(fmt::format("{}: {} input channels are not divisible by groups={}", x_desc, x[1], groups));
  if (w[0] % groups != 0)
    c.fail(fmt::format("{}: {} output channels are not divisible by groups={}", w_desc, w[0], groups));
  if (w[1] * groups != x[1])
    c.fail(fmt::format("{} expects {} input channels per group, but {} has {} channels in {} group(s)", w_desc, w[1],
                       x_desc, x[1], groups));
  Shape out = {x[0], w[0], 0, 0};
  for (int i = 0; i < 2; ++i)
    out[2 + i] = window_out(c, i == 0 ? "height" : "width", x[2 + i], dilation[i] * (w[2 + i] - 1) + 1, stride[i],
                            padding[i]);
  return out;
}

Shape pool_out_shape(const ShapeContext& c, const Shape& x, const std::string& x_desc) {
  const auto& kernel = ints_attr(c, "kernel", 2, 1);
  const auto& stride = ints_attr(c, "stride", 2, 1);
  const auto& padding = ints_attr(c, "padding", 2, 0);
  if (x.size() != 4) c.fail(fmt::format("{} must have rank 4 ([N, C, H, W])", x_desc));
  for (int i = 0; i < 2; ++i)
    if (padding[i] * 2 > kernel[i])
      c.fail(fmt::format("padding {} must be at most half the kernel {} (as PyTorch requires)",
                         shape_to_string(padding), shape_to_string(kernel)));
  Shape out = {x[0], x[1], 0, 0};
  for (int i = 0; i < 2; ++i)
    out[2 + i] = window_out(c, i == 0 ? "height" : "width", x[2 + i], kernel[i], stride[i], padding[i]);
  return out;
}

void require_shape(const ShapeContext& c, size_t i, const Shape& expected, const char* why) {
  if (c.inputs[i].shape != expected)
    c.fail(fmt::format("{} must have shape {} ({})", c.describe_input(i), shape_to_string(expected), why));
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
    if (axes[i] < 0 || axes[i] >= int64_t(in.size()))
      c.fail(fmt::format("axis {} is out of range for {}", axes[i], c.describe_input(0)));
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

TensorType matmul(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 0);
  const Shape& a = c.inputs[0].shape;
  const Shape& b = c.inputs[1].shape;
  if (a.size() < 2) c.fail(fmt::format("{} must have rank >= 2 ([.., M, K])", c.describe_input(0)));
  if (b.size() < 2) c.fail(fmt::format("{} must have rank >= 2 ([.., K, N])", c.describe_input(1)));
  if (a[a.size() - 1] != b[b.size() - 2])
    c.fail(fmt::format("inner dimensions differ: {} has K={}, {} has K={}", c.describe_input(0), a[a.size() - 1],
                       c.describe_input(1), b[b.size() - 2]));
  Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(batch_a, batch_b);
  if (!batch)
    c.fail(fmt::format("batch dimensions of {} and {} do not broadcast", c.describe_input(0), c.describe_input(1)));
  Shape out = *batch;
  out.push_back(a[a.size() - 2]);
  out.push_back(b[b.size() - 1]);
  return {c.inputs[0].dtype, out};
}

TensorType conv2d(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 0);
  return {c.inputs[0].dtype, conv_out_shape(c, c.inputs[0].shape, c.inputs[1].shape, c.describe_input(0),
                                            c.describe_input(1))};
}

TensorType pool2d(const ShapeContext& c) {
  require_float(c, 0);
  return {c.inputs[0].dtype, pool_out_shape(c, c.inputs[0].shape, c.describe_input(0))};
}

TensorType max_pool2d_argmax(const ShapeContext& c) {
  require_float(c, 0);
  return {DType::I32, pool_out_shape(c, c.inputs[0].shape, c.describe_input(0))};
}

TensorType softmax(const ShapeContext& c) {
  require_float(c, 0);
  int64_t axis = c.attrs.get_int("axis");
  if (axis < 0 || axis >= c.inputs[0].rank())
    c.fail(fmt::format("axis {} is out of range for {}", axis, c.describe_input(0)));
  return c.inputs[0];
}

TensorType cross_entropy(const ShapeContext& c) {
  require_float(c, 0);
  require_rank(c, 0, 2, "logits [N, C]");
  if (!is_int(c.inputs[1].dtype)) c.fail(fmt::format("{} (the labels) must be i32 or i64", c.describe_input(1)));
  require_shape(c, 1, {c.inputs[0].shape[0]}, "one label per row of the logits");
  return {c.inputs[0].dtype, {}};
}

TensorType activation_grad(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  if (c.op != OpKind::ReluGrad) require_float(c, 0);
  else require_numeric(c, 0);
  require_shape(c, 0, c.inputs[1].shape, "the gradient has the activation's shape");
  return c.inputs[1];
}

TensorType max_pool2d_grad(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 1);
  Shape out = pool_out_shape(c, c.inputs[1].shape, c.describe_input(1));
  require_shape(c, 0, out, "the gradient has max_pool2d's result shape");
  return c.inputs[1];
}

TensorType conv2d_grad_input(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 0);
  Shape in = shape_attr(c, "input_shape");
  Shape out = conv_out_shape(c, in, c.inputs[1].shape, "input_shape " + shape_to_string(in), c.describe_input(1));
  require_shape(c, 0, out, "the gradient has conv2d's result shape");
  return {c.inputs[0].dtype, in};
}

TensorType conv2d_grad_weight(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 0);
  Shape w = shape_attr(c, "weight_shape");
  Shape out = conv_out_shape(c, c.inputs[1].shape, w, c.describe_input(1), "weight_shape " + shape_to_string(w));
  require_shape(c, 0, out, "the gradient has conv2d's result shape");
  return {c.inputs[0].dtype, w};
}

TensorType avg_pool2d_grad(const ShapeContext& c) {
  require_float(c, 0);
  Shape in = shape_attr(c, "input_shape");
  Shape out = pool_out_shape(c, in, "input_shape " + shape_to_string(in));
  require_shape(c, 0, out, "the gradient has avg_pool2d's result shape");
  return {c.inputs[0].dtype, in};
}

TensorType max_pool2d_grad_argmax(const ShapeContext& c) {
  require_float(c, 0);
  if (c.inputs[1].dtype != DType::I32)
    c.fail(fmt::format("{} (the windows' maxima, max_pool2d_argmax's result) must be i32", c.describe_input(1)));
  Shape in = shape_attr(c, "input_shape");
  Shape out = pool_out_shape(c, in, "input_shape " + shape_to_string(in));
  require_shape(c, 0, out, "the gradient has max_pool2d's result shape");
  require_shape(c, 1, out, "one position per window");
  return {c.inputs[0].dtype, in};
}

TensorType cross_entropy_grad(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 1);
  require_shape(c, 0, {}, "the gradient of the scalar loss");
  require_rank(c, 1, 2, "logits [N, C]");
  if (!is_int(c.inputs[2].dtype)) c.fail(fmt::format("{} (the labels) must be i32 or i64", c.describe_input(2)));
  require_shape(c, 2, {c.inputs[1].shape[0]}, "one label per row of the logits");
  return c.inputs[1];
}

}  // namespace shape_rules
}  // namespace spire::graph
