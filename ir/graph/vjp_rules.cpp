// VJP rules: for each differentiable op, the ops that turn the gradient of its result into gradients of
// its inputs. They follow PyTorch's derivative formulas (tools/autograd/derivatives.yaml), so a gradient
// computed here matches torch.autograd's up to rounding, ties included where PyTorch defines them.
//
// Each rule copies what it needs from the node first: appending to the graph may move the node storage.
#include <fmt/format.h>

#include "ir/graph/op_table.h"

namespace spire::graph::vjp_rules {
namespace {

// Sums a broadcast gradient back to an input's shape (identity when the shapes already agree).
Value reduce_to(Graph& g, Value grad, const Shape& shape) {
  return g.type(grad).shape == shape ? grad : g.sum_to(grad, shape);
}

struct Operands {
  Node node;
  std::vector<TensorType> types;
  Value in(size_t i) const { return node.inputs[i]; }
  const Shape& shape(size_t i) const { return types[i].shape; }
  DType dtype() const { return node.type.dtype; }
};

Operands operands(const VjpContext& c) {
  Operands o{c.g.node(c.out), {}};
  for (Value v : o.node.inputs) o.types.push_back(c.g.type(v));
  return o;
}

Value zero(Graph& g, DType t) { return g.scalar(0.0, t); }

// The result shape of a reduction with keepdim, from the input shape and the reduced axes.
Shape keepdim_shape(const Shape& in, const std::vector<int64_t>& axes) {
  Shape s = in;
  for (int64_t a : axes) s[size_t(a)] = 1;
  return s;
}

// A reduction's gradient (shape of the result) broadcast back over the reduced axes to the input shape.
Value expand_reduced(Graph& g, Value grad, const Node& n, const Shape& in) {
  Shape kept = keepdim_shape(in, n.attrs.get_ints("axes"));
  Value gk = g.type(grad).shape == kept ? grad : g.reshape(grad, kept);
  return g.type(gk).shape == in ? gk : g.broadcast_to(gk, in);
}

}  // namespace

std::vector<Value> add(VjpContext& c) {
  auto o = operands(c);
  Value g0, g1;
  if (c.wants(0)) g0 = reduce_to(c.g, c.grad_out, o.shape(0));
  if (c.wants(1)) g1 = reduce_to(c.g, c.grad_out, o.shape(1));
  return {g0, g1};
}

std::vector<Value> sub(VjpContext& c) {
  auto o = operands(c);
  Value g0, g1;
  if (c.wants(0)) g0 = reduce_to(c.g, c.grad_out, o.shape(0));
  if (c.wants(1)) g1 = reduce_to(c.g, c.g.neg(c.grad_out), o.shape(1));
  return {g0, g1};
}

std::vector<Value> mul(VjpContext& c) {
  auto o = operands(c);
  Value g0, g1;
  if (c.wants(0)) g0 = reduce_to(c.g, c.g.mul(c.grad_out, o.in(1)), o.shape(0));
  if (c.wants(1)) g1 = reduce_to(c.g, c.g.mul(c.grad_out, o.in(0)), o.shape(1));
  return {g0, g1};
}

// d(a/b) = g/b, -g a / b^2 = -(g/b) * (a/b)
std::vector<Value> div(VjpContext& c) {
  auto o = operands(c);
  Value g0, g1;
  Value g_over_b = c.g.div(c.grad_out, o.in(1));
  if (c.wants(0)) g0 = reduce_to(c.g, g_over_b, o.shape(0));
  if (c.wants(1)) g1 = reduce_to(c.g, c.g.neg(c.g.mul(g_over_b, c.out)), o.shape(1));
  return {g0, g1};
}

// d(a^b) = g b a^(b-1), g a^b log(a)
std::vector<Value> pow(VjpContext& c) {
  auto o = operands(c);
  Value g0, g1;
  if (c.wants(0)) {
    Value d = c.g.mul(o.in(1), c.g.pow(o.in(0), c.g.sub(o.in(1), 1.0)));
    g0 = reduce_to(c.g, c.g.mul(c.grad_out, d), o.shape(0));
  }
  if (c.wants(1)) g1 = reduce_to(c.g, c.g.mul(c.grad_out, c.g.mul(c.out, c.g.log(o.in(0)))), o.shape(1));
  return {g0, g1};
}

namespace {
// maximum / minimum: the winning side gets the gradient; on a tie each side gets half (as PyTorch).
std::vector<Value> select_extreme(VjpContext& c, CompareMode wins) {
  auto o = operands(c);
  Graph& g = c.g;
  Value zero_v = zero(g, o.dtype());
  Value half = g.mul(c.grad_out, 0.5);
  Value tie = g.compare(o.in(0), o.in(1), CompareMode::Eq);
  Value tie_share = g.where(tie, half, zero_v);
  Value g0, g1;
  if (c.wants(0)) g0 = reduce_to(g, g.where(g.compare(o.in(0), o.in(1), wins), c.grad_out, tie_share), o.shape(0));
  if (c.wants(1)) g1 = reduce_to(g, g.where(g.compare(o.in(1), o.in(0), wins), c.grad_out, tie_share), o.shape(1));
  return {g0, g1};
}
}  // namespace

std::vector<Value> maximum(VjpContext& c) { return select_extreme(c, CompareMode::Gt); }
std::vector<Value> minimum(VjpContext& c) { return select_extreme(c, CompareMode::Lt); }

std::vector<Value> neg(VjpContext& c) { return {c.g.neg(c.grad_out)}; }
std::vector<Value> exp(VjpContext& c) { return {c.g.mul(c.grad_out, c.out)}; }
std::vector<Value> log(VjpContext& c) { return {c.g.div(c.grad_out, c.g.node(c.out).inputs[0])}; }

// d sqrt(x) = g / (2 sqrt(x))
std::vector<Value> sqrt(VjpContext& c) { return {c.g.div(c.grad_out, c.g.mul(c.out, 2.0))}; }

// d tanh = g (1 - y^2)
std::vector<Value> tanh(VjpContext& c) {
  Graph& g = c.g;
  Value one = g.scalar(1.0, g.type(c.out).dtype);
  return {g.mul(c.grad_out, g.sub(one, g.mul(c.out, c.out)))};
}

// d sigmoid = g (1 - y) y
std::vector<Value> sigmoid(VjpContext& c) {
  Graph& g = c.g;
  Value one = g.scalar(1.0, g.type(c.out).dtype);
  return {g.mul(g.mul(c.grad_out, g.sub(one, c.out)), c.out)};
}

// relu's gradient only needs the sign of its result (y > 0 iff x > 0), so x need not stay alive.
std::vector<Value> relu(VjpContext& c) { return {c.g.relu_grad(c.grad_out, c.out)}; }
std::vector<Value> silu(VjpContext& c) { return {c.g.silu_grad(c.grad_out, c.g.node(c.out).inputs[0])}; }
std::vector<Value> gelu(VjpContext& c) { return {c.g.gelu_grad(c.grad_out, c.g.node(c.out).inputs[0])}; }

std::vector<Value> where(VjpContext& c) {
  auto o = operands(c);
  Graph& g = c.g;
  Value zero_v = zero(g, o.dtype());
  Value g1, g2;
  if (c.wants(1)) g1 = reduce_to(g, g.where(o.in(0), c.grad_out, zero_v), o.shape(1));
  if (c.wants(2)) g2 = reduce_to(g, g.where(o.in(0), zero_v, c.grad_out), o.shape(2));
  return {Value{}, g1, g2};
}

// Only float -> float casts carry a gradient (cast back to the input's dtype).
std::vector<Value> cast(VjpContext& c) {
  auto o = operands(c);
  if (!is_float(o.types[0].dtype) || !is_float(o.dtype())) return {Value{}};
  return {o.types[0].dtype == o.dtype() ? c.grad_out : c.g.cast(c.grad_out, o.types[0].dtype)};
}

std::vector<Value> sum(VjpContext& c) {
  auto o = operands(c);
  return {expand_reduced(c.g, c.grad_out, o.node, o.shape(0))};
}

std::vector<Value> mean(VjpContext& c) {
  auto o = operands(c);
  int64_t count = 1;
  for (int64_t a : o.node.attrs.get_ints("axes")) count *= o.shape(0)[size_t(a)];
  Value expanded = expand_reduced(c.g, c.grad_out, o.node, o.shape(0));
  return {c.g.div(expanded, double(count))};
}

// amax: the gradient is shared evenly among the maximal elements of each reduced slice (as PyTorch's amax).
std::vector<Value> max(VjpContext& c) {
  auto o = operands(c);
  Graph& g = c.g;
  DType t = o.dtype();
  Shape kept = keepdim_shape(o.shape(0), o.node.attrs.get_ints("axes"));
  Value y = expand_reduced(g, c.out, o.node, o.shape(0));
  Value is_max = g.compare(o.in(0), y, CompareMode::Eq);
  Value count = g.sum(g.where(is_max, g.scalar(1.0, t), zero(g, t)), o.node.attrs.get_ints("axes"), true);
  Value gk = g.type(c.grad_out).shape == kept ? c.grad_out : g.reshape(c.grad_out, kept);
  Value share = g.div(gk, count);
  return {g.where(is_max, share, zero(g, t))};
}

std::vector<Value> reshape(VjpContext& c) {
  auto o = operands(c);
  return {c.g.reshape(c.grad_out, o.shape(0))};
}

std::vector<Value> permute(VjpContext& c) {
  auto o = operands(c);
  const auto& perm = o.node.attrs.get_ints("perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  return {c.g.permute(c.grad_out, inverse)};
}

std::vector<Value> broadcast_to(VjpContext& c) {
  auto o = operands(c);
  return {reduce_to(c.g, c.grad_out, o.shape(0))};
}

std::vector<Value> sum_to(VjpContext& c) {
  auto o = operands(c);
  return {c.g.broadcast_to(c.grad_out, o.shape(0))};
}

}  // namespace spire::graph::vjp_rules
