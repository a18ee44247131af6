// The PyTorch-like builder methods of Graph: each fills an op's attributes and calls add_node / add_leaf,
// which run the op's shape rule.
#include <algorithm>

#include <fmt/format.h>

#include "ir/graph/graph.h"

namespace spire::graph {
namespace {

// A possibly negative axis (counting from the end) made non-negative; fails clearly when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw GraphError(fmt::format("{}: axis {} is out of range for rank {}", op, axis, rank));
  return a;
}

std::vector<int64_t> normalize_axes(std::vector<int64_t> axes, int64_t rank, std::string_view op) {
  for (int64_t& a : axes) a = normalize_axis(a, rank, op);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    throw GraphError(fmt::format("{}: repeated axis in {}", op, shape_to_string(axes)));
  return axes;
}

std::vector<int64_t> all_axes(int64_t rank) {
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) axes[size_t(i)] = i;
  return axes;
}

Attrs conv_attrs(const Conv2dOptions& o) {
  return {{"stride", o.stride}, {"padding", o.padding}, {"dilation", o.dilation}, {"groups", o.groups}};
}

Attrs pool_attrs(const Pool2dOptions& o) {
  return {{"kernel", o.kernel}, {"stride", o.stride.empty() ? o.kernel : o.stride}, {"padding", o.padding}};
}

}  // namespace

// ---- leaves

Value Graph::input(std::string name, DType dtype, Shape shape) {
  return add_leaf(OpKind::Input, std::move(name), {dtype, std::move(shape)});
}

Value Graph::parameter(std::string name, DType dtype, Shape shape) {
  return add_leaf(OpKind::Parameter, std::move(name), {dtype, std::move(shape)});
}

Value Graph::state(std::string name, DType dtype, Shape shape, double init) {
  return add_leaf(OpKind::State, std::move(name), {dtype, std::move(shape)}, {{"init", init}});
}

Value Graph::constant(double value, DType dtype, Shape shape) {
  return add_leaf(OpKind::Constant, "", {dtype, std::move(shape)}, {{"value", value}});
}

// ---- elementwise

Value Graph::add(Value a, Value b) { return add_node(OpKind::Add, {a, b}, {}); }
Value Graph::sub(Value a, Value b) { return add_node(OpKind::Sub, {a, b}, {}); }
Value Graph::mul(Value a, Value b) { return add_node(OpKind::Mul, {a, b}, {}); }
Value Graph::div(Value a, Value b) { return add_node(OpKind::Div, {a, b}, {}); }
Value Graph::pow(Value a, Value b) { return add_node(OpKind::Pow, {a, b}, {}); }
Value Graph::add(Value a, double b) { return add(a, scalar(b, type(a).dtype)); }
Value Graph::sub(Value a, double b) { return sub(a, scalar(b, type(a).dtype)); }
Value Graph::mul(Value a, double b) { return mul(a, scalar(b, type(a).dtype)); }
Value Graph::div(Value a, double b) { return div(a, scalar(b, type(a).dtype)); }
Value Graph::maximum(Value a, Value b) { return add_node(OpKind::Maximum, {a, b}, {}); }
Value Graph::minimum(Value a, Value b) { return add_node(OpKind::Minimum, {a, b}, {}); }

Value Graph::compare(Value a, Value b, CompareMode mode) {
  return add_node(OpKind::Compare, {a, b}, {{"mode", std::string(compare_mode_name(mode))}});
}

Value Graph::where(Value cond, Value a, Value b) { return add_node(OpKind::Where, {cond, a, b}, {}); }

Value Graph::cast(Value x, DType to) {
  return add_node(OpKind::Cast, {x}, {{"to", std::string(dtype_name(to))}});
}

Value Graph::neg(Value x) { return add_node(OpKind::Neg, {x}, {}); }
Value Graph::exp(Value x) { return add_node(OpKind::Exp, {x}, {}); }
Value Graph::log(Value x) { return add_node(OpKind::Log, {x}, {}); }
Value Graph::sqrt(Value x) { return add_node(OpKind::Sqrt, {x}, {}); }
Value Graph::tanh(Value x) { return add_node(OpKind::Tanh, {x}, {}); }
Value Graph::sigmoid(Value x) { return add_node(OpKind::Sigmoid, {x}, {}); }
Value Graph::relu(Value x) { return add_node(OpKind::Relu, {x}, {}); }
Value Graph::silu(Value x) { return add_node(OpKind::Silu, {x}, {}); }
Value Graph::gelu(Value x) { return add_node(OpKind::Gelu, {x}, {}); }

// ---- reductions

Value Graph::sum(Value x, std::vector<int64_t> axes, bool keepdim) {
  return add_node(OpKind::Sum, {x}, {{"axes", normalize_axes(std::move(axes), type(x).rank(), "sum")}, {"keepdim", keepdim}});
}
Value Graph::mean(Value x, std::vector<int64_t> axes, bool keepdim) {
  return add_node(OpKind::Mean, {x}, {{"axes", normalize_axes(std::move(axes), type(x).rank(), "mean")}, {"keepdim", keepdim}});
}
Value Graph::max(Value x, std::vector<int64_t> axes, bool keepdim) {
  return add_node(OpKind::Max, {x}, {{"axes", normalize_axes(std::move(axes), type(x).rank(), "max")}, {"keepdim", keepdim}});
}
Value Graph::sum(Value x) { return sum(x, all_axes(type(x).rank()), false); }
Value Graph::mean(Value x) { return mean(x, all_axes(type(x).rank()), false); }

// ---- layout

Value Graph::reshape(Value x, Shape shape) {
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) throw GraphError(fmt::format("reshape: more than one -1 in {}", shape_to_string(shape)));
      inferred = int64_t(i);
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    int64_t total = type(x).numel();
    if (known == 0 || total % known != 0)
      throw GraphError(fmt::format("reshape: cannot infer the -1 in {} for {}", shape_to_string(shape),
                                   type(x).to_string()));
    shape[size_t(inferred)] = total / known;
  }
  return add_node(OpKind::Reshape, {x}, {{"shape", std::move(shape)}});
}

Value Graph::flatten(Value x, int64_t start_dim, int64_t end_dim) {
  int64_t rank = type(x).rank();
  return add_node(OpKind::Flatten, {x},
                  {{"start_dim", normalize_axis(start_dim, rank, "flatten")},
                   {"end_dim", normalize_axis(end_dim, rank, "flatten")}});
}

Value Graph::permute(Value x, std::vector<int64_t> perm) {
  int64_t rank = type(x).rank();
  for (int64_t& p : perm) p = normalize_axis(p, rank, "permute");
  return add_node(OpKind::Permute, {x}, {{"perm", std::move(perm)}});
}

Value Graph::transpose(Value x) {
  if (type(x).rank() < 2) throw GraphError(fmt::format("transpose: {} has rank < 2", type(x).to_string()));
  return transpose(x, -2, -1);
}

Value Graph::transpose(Value x, int64_t dim0, int64_t dim1) {
  int64_t rank = type(x).rank();
  std::vector<int64_t> perm = all_axes(rank);
  std::swap(perm[size_t(normalize_axis(dim0, rank, "transpose"))], perm[size_t(normalize_axis(dim1, rank, "transpose"))]);
  return add_node(OpKind::Permute, {x}, {{"perm", std::move(perm)}});
}

Value Graph::broadcast_to(Value x, Shape shape) { return add_node(OpKind::BroadcastTo, {x}, {{"shape", std::move(shape)}}); }
Value Graph::sum_to(Value x, Shape shape) { return add_node(OpKind::SumTo, {x}, {{"shape", std::move(shape)}}); }

// ---- heavy ops

Value Graph::matmul(Value a, Value b) { return add_node(OpKind::Matmul, {a, b}, {}); }
Value Graph::conv2d(Value x, Value w, const Conv2dOptions& opt) { return add_node(OpKind::Conv2d, {x, w}, conv_attrs(opt)); }
Value Graph::max_pool2d(Value x, const Pool2dOptions& opt) { return add_node(OpKind::MaxPool2d, {x}, pool_attrs(opt)); }
Value Graph::avg_pool2d(Value x, const Pool2dOptions& opt) { return add_node(OpKind::AvgPool2d, {x}, pool_attrs(opt)); }


Value Graph::linear(Value x, Value w, Value b) {
  if (type(w).rank() != 2)
    throw GraphError(fmt::format("linear: weight {} must be [out_features, in_features]", type(w).to_string()));
  Value y = matmul(x, transpose(w));
  return b.valid() ? add(y, b) : y;
}

// ---- backward-only ops

Value Graph::relu_grad(Value grad, Value x) { return add_node(OpKind::ReluGrad, {grad, x}, {}); }
Value Graph::silu_grad(Value grad, Value x) { return add_node(OpKind::SiluGrad, {grad, x}, {}); }
Value Graph::gelu_grad(Value grad, Value x) { return add_node(OpKind::GeluGrad, {grad, x}, {}); }

Value Graph::conv2d_grad_input(Value grad_out, Value w, const Conv2dOptions& opt, Shape input_shape) {
  Attrs a = conv_attrs(opt);
  a.set("input_shape", std::move(input_shape));
  return add_node(OpKind::Conv2dGradInput, {grad_out, w}, std::move(a));
}

Value Graph::conv2d_grad_weight(Value grad_out, Value x, const Conv2dOptions& opt, Shape weight_shape) {
  Attrs a = conv_attrs(opt);
  a.set("weight_shape", std::move(weight_shape));
  return add_node(OpKind::Conv2dGradWeight, {grad_out, x}, std::move(a));
}

Value Graph::max_pool2d_grad(Value grad_out, Value x, const Pool2dOptions& opt) {
  return add_node(OpKind::MaxPool2dGrad, {grad_out, x}, pool_attrs(opt));
}

Value Graph::max_pool2d_argmax(Value x, const Pool2dOptions& opt) {
  return add_node(OpKind::MaxPool2dArgmax, {x}, pool_attrs(opt));
}

Value Graph::max_pool2d_grad_argmax(Value grad_out, Value argmax, const Pool2dOptions& opt, Shape input_shape) {
  Attrs a = pool_attrs(opt);
  a.set("input_shape", std::move(input_shape));
  return add_node(OpKind::MaxPool2dGradArgmax, {grad_out, argmax}, std::move(a));
}

Value Graph::avg_pool2d_grad(Value grad_out, const Pool2dOptions& opt, Shape input_shape) {
  Attrs a = pool_attrs(opt);
  a.set("input_shape", std::move(input_shape));
  return add_node(OpKind::AvgPool2dGrad, {grad_out}, std::move(a));
}

}  // namespace spire::graph
