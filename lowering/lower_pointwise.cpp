// Pointwise ops: one invocation per output element, numpy broadcasting through per-input index maps,
// arithmetic in the value's device type (f32, f64, or i32 for integers; bool is u32 0/1).
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "lowering/kernel_templates.h"
#include "lowering/op_lowering.h"

namespace spire::lowering {

using kir::Type;
using kir::Val;

namespace {

// sqrt(2 / pi) and the cubic coefficient of the tanh form of GELU.
constexpr double kGeluScale = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;

Val as_bool(Val u) { return u != 0u; }  // a stored bool (u32 0/1) as a register bool
Val from_bool(kir::KernelBuilder& kb, Val b) { return kir::select(b, kb.u32(1), kb.u32(0)); }

Val sigmoid(Val x) { return 1.0 / (1.0 + kir::exp(-x)); }

// Bits that fit the device type: bool 0/1, i64 must fit the i32 it is stored as.
double device_constant(const graph::Node& n, double value) {
  if (n.type.dtype == graph::DType::Bool) return value != 0 ? 1 : 0;
  if (n.type.dtype == graph::DType::I64 &&
      (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()))
    throw graph::GraphError(fmt::format("constant '{}' = {} does not fit the 32-bit integers i64 is stored as on "
                                        "devices", n.name, value));
  return value;
}

Val compare(graph::CompareMode m, Val a, Val b) {
  switch (m) {
    case graph::CompareMode::Lt: return a < b;
    case graph::CompareMode::Le: return a <= b;
    case graph::CompareMode::Gt: return a > b;
    case graph::CompareMode::Ge: return a >= b;
    case graph::CompareMode::Eq: return a == b;
    case graph::CompareMode::Ne: return a != b;
  }
  return a == b;
}

// The tanh form of GELU through 1 + tanh(u) = 2 sigmoid(2u): the same function, but for very negative x it
// divides by a large number instead of cancelling 1 + tanh(u) ~ 1 - 1 in float32 (which loses every digit).
Val gelu_gate(Val x) {  // sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
  Val u = kGeluScale * (x + kGeluCubic * x * x * x);
  return 1.0 / (1.0 + kir::exp(-2.0 * u));
}

Val gelu(Val x) { return x * gelu_gate(x); }

// d gelu / dx = s + x s (1 - s) 2 sqrt(2/pi) (1 + 3 * 0.044715 x^2), s = sigmoid(2u) (since 1 - tanh^2 = 4 s (1 - s)).
Val gelu_derivative(Val x) {
  Val s = gelu_gate(x);
  return s + x * s * (1.0 - s) * (2.0 * kGeluScale) * (1.0 + 3.0 * kGeluCubic * x * x);
}

}  // namespace

std::string pointwise_kernel_name(const graph::Graph& g, graph::Value v, std::string_view op) {
  const graph::Node& n = g.node(v);
  std::string name = fmt::format("{}_{}_{}", op, graph::dtype_name(n.type.dtype), shape_tag(n.type.shape));
  bool same = true;
  for (graph::Value in : n.inputs) same = same && g.type(in).shape == n.type.shape;
  if (!same) {
    name += "_from";
    for (graph::Value in : n.inputs) name += "_" + shape_tag(g.type(in).shape);
  }
  return name;
}

std::vector<PointwiseOperand> pointwise_operands(const graph::Graph& g, graph::Value v) {
  const graph::Node& n = g.node(v);
  std::vector<PointwiseOperand> ops;
  for (graph::Value in : n.inputs) {
    const graph::Node& src = g.node(in);
    PointwiseOperand o;
    o.value = in;
    o.type = device_type(src.type.dtype);
    if (src.op == graph::OpKind::Constant) {
      o.folded = true;
      o.constant = device_constant(src, src.attrs.get_float("value"));
    } else {
      o.map = IndexMap::broadcast(n.type.shape, src.type.shape);
    }
    ops.push_back(std::move(o));
  }
  return ops;
}

void launch_pointwise(LoweringContext& ctx, graph::Value v, const std::string& kernel_name,
                      const std::vector<PointwiseOperand>& operands,
                      const std::function<Val(kir::KernelBuilder&, const std::vector<Val>&)>& body) {
  const graph::Graph& g = ctx.graph();
  const graph::TensorType& out_type = g.type(v);
  int64_t n = out_type.numel();
  kir::KernelBuilder kb(kernel_name, kPointwiseWorkgroup);
  std::vector<kir::Buf> bufs(operands.size());
  std::vector<int32_t> bindings;
  for (size_t k = 0; k < operands.size(); ++k) {
    if (operands[k].folded) continue;
    bufs[k] = kb.buffer(fmt::format("in{}", k), operands[k].type, kir::Access::Read);
    bindings.push_back(ctx.buffer_of(operands[k].value));
  }
  Type out_dt = device_type(out_type.dtype);
  kir::Buf out = kb.buffer("out", out_dt, kir::Access::Write);
  bindings.push_back(ctx.buffer_of(v));
  Val i = kb.global_id();
  kb.if_(i < kb.u32(uint32_t(n)), [&] {
    std::vector<Val> args;
    for (size_t k = 0; k < operands.size(); ++k) {
      if (operands[k].folded) args.push_back(kb.constant(operands[k].type, operands[k].constant));
      else args.push_back(bufs[k][operands[k].map.is_identity() ? i : operands[k].map.emit(kb, i)]);
    }
    Val r = body(kb, args);
    if (r.type() != out_dt)
      throw std::logic_error(fmt::format("pointwise kernel {} computes {} for a {} output", kernel_name,
                                         kir::type_name(r.type()), kir::type_name(out_dt)));
    out[i] = r;
  });
  ctx.launch(kb.finish(), std::move(bindings), {}, groups_for(n, kPointwiseWorkgroup));
}

kir::Kernel copy_kernel(Type type, int64_t n) {
  return gather_kernel(fmt::format("copy_{}_{}", kir::type_name(type), n), type, n, IndexMap::strided({n}, {1}));
}

kir::Kernel gather_kernel(const std::string& name, Type type, int64_t n, const IndexMap& map) {
  kir::KernelBuilder kb(name, kPointwiseWorkgroup);
  kir::Buf x = kb.buffer("x", type, kir::Access::Read);
  kir::Buf y = kb.buffer("y", type, kir::Access::Write);
  Val i = kb.global_id();
  kb.if_(i < kb.u32(uint32_t(n)), [&] { y[i] = x[map.is_identity() ? i : map.emit(kb, i)]; });
  return kb.finish();
}

void lower_elementwise(LoweringContext& ctx, graph::Value v) {
  using K = graph::OpKind;
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  if (n.type.numel() > int64_t(std::numeric_limits<uint32_t>::max()))
    throw graph::GraphError(fmt::format("{} '{}': {} elements exceed the 2^32 a kernel indexes", graph::op_name(n.op),
                                        n.name, n.type.numel()));
  if (n.op == K::Cast && device_type(n.type.dtype) == device_type(g.type(n.inputs[0]).dtype)) {
    ctx.alias(v, n.inputs[0]);  // i32 <-> i64 (both stored as i32), or a cast to the same dtype
    return;
  }
  std::string op(graph::op_name(n.op));
  if (n.op == K::Compare) op += "_" + n.attrs.get_string("mode");
  if (n.op == K::Cast) op += "_from_" + std::string(graph::dtype_name(g.type(n.inputs[0]).dtype));
  auto operands = pointwise_operands(g, v);
  Type out_dt = device_type(n.type.dtype);
  auto body = [&](kir::KernelBuilder& kb, const std::vector<Val>& a) -> Val {
    switch (n.op) {
      case K::Add: return a[0] + a[1];
      case K::Sub: return a[0] - a[1];
      case K::Mul: return a[0] * a[1];
      case K::Div: return a[0] / a[1];
      case K::Pow: return kir::pow(a[0], a[1]);
      case K::Maximum: return kir::max(a[0], a[1]);
      case K::Minimum: return kir::min(a[0], a[1]);
      case K::Compare: {
        auto mode = graph::compare_mode_from_name(n.attrs.get_string("mode"));
        return from_bool(kb, compare(*mode, a[0], a[1]));
      }
      case K::Neg: return -a[0];
      case K::Exp: return kir::exp(a[0]);
      case K::Log: return kir::log(a[0]);
      case K::Sqrt: return kir::sqrt(a[0]);
      case K::Tanh: return kir::tanh(a[0]);
      case K::Sigmoid: return sigmoid(a[0]);
      case K::Relu: return kir::select(a[0] > 0, a[0], kir::like(a[0], 0));
      case K::Silu: return a[0] * sigmoid(a[0]);
      case K::Gelu: return gelu(a[0]);
      case K::Where: return kir::select(as_bool(a[0]), a[1], a[2]);
      case K::Cast: {
        graph::DType from = g.type(n.inputs[0]).dtype;
        if (n.type.dtype == graph::DType::Bool) return from_bool(kb, a[0] != kir::like(a[0], 0));
        if (from == graph::DType::Bool) return kir::select(as_bool(a[0]), kb.constant(out_dt, 1), kb.constant(out_dt, 0));
        return kir::cast(a[0], out_dt);
      }
      case K::ReluGrad: return kir::select(a[1] > 0, a[0], kir::like(a[0], 0));
      case K::SiluGrad: {
        Val s = sigmoid(a[1]);
        return a[0] * (s * (1.0 + a[1] * (1.0 - s)));
      }
      case K::GeluGrad: return a[0] * gelu_derivative(a[1]);
      default:
        throw graph::GraphError(fmt::format("op {} ('{}') is not pointwise", graph::op_name(n.op), n.name));
    }
  };
  launch_pointwise(ctx, v, pointwise_kernel_name(g, v, op), operands, body);
}

}  // namespace spire::lowering
