// Unary pointwise ops (float only unless the entry says numeric). Formulas follow PyTorch's CPU kernels, NaN
// included (relu propagates NaN).
#include "ir/graph/ops/common.h"

namespace spire::graph::ops {

namespace {

// gelu's tanh form: 0.5 x (1 + tanh(kBeta (x + kKappa x^3))), kBeta = sqrt(2 / pi).
constexpr double kBeta = 0.7978845608028654;
constexpr double kKappa = 0.044715;

// The input of the node whose gradient is being formed (copied: appending to the graph moves node storage).
Value input_of(const VjpContext& c) { return c.g.node(c.out).inputs[0]; }

// A zero gradient of the result's type (ceil, floor, sign: PyTorch's gradient is zero almost everywhere).
std::vector<Value> zero_grad(VjpContext& c) {
  const TensorType t = c.g.type(c.out);
  return {c.g.constant(0.0, t.dtype, t.shape)};
}

double gelu_ref(double v) { return 0.5 * v * (1.0 + std::tanh(kBeta * (v + kKappa * v * v * v))); }

// On devices through 1 + tanh(u) = 2 sigmoid(2u): the same function, but for very negative x it divides by a
// large number instead of cancelling 1 + tanh(u) ~ 1 - 1 in float32 (which loses every digit).
Val gelu_gate(Val x) { return 1.0 / (1.0 + kir::exp(-2.0 * (kBeta * (x + kKappa * x * x * x)))); }

}  // namespace

// d gelu / dx on devices = s + x s (1 - s) 2 kBeta (1 + 3 kKappa x^2), s = sigmoid(2u) (1 - tanh^2 = 4 s (1 - s)).
Val gelu_derivative(Val x) {
  Val s = gelu_gate(x);
  return s + x * s * (1.0 - s) * (2.0 * kBeta) * (1.0 + 3.0 * kKappa * x * x);
}

// The same derivative in double, from the tanh form:
//   0.5 (1 + t) + 0.5 x (1 - t^2) kBeta (1 + 3 kKappa x^2), t = tanh(kBeta (x + kKappa x^3)).
double gelu_derivative(double v) {
  const double t = std::tanh(kBeta * (v + kKappa * v * v * v));
  return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * kBeta * (1.0 + 3.0 * kKappa * v * v);
}

std::vector<OpInfo> unary() {
  const OpCategory P = OpCategory::Pointwise;
  auto on = [](double lo, double hi) { return TestDomain{.generate = true, .inputs = {{lo, hi}}}; };
  return {
      {.kind = OpKind::Neg, .name = "neg", .arity = 1, .category = P, .shape = S::unary_numeric, .vjp = V::neg,
       .scalar = [](const Node&, std::span<const double> x) { return -x[0]; },
       .formula = [](const PointwiseEmit& e) { return -e.x[0]; },
       .forward = kExact, .backward = kExact, .test = {.generate = true, .integers = true}},
      {.kind = OpKind::Exp, .name = "exp", .arity = 1, .category = P, .shape = S::unary_float, .vjp = V::exp,
       .scalar = [](const Node&, std::span<const double> x) { return std::exp(x[0]); },
       .formula = [](const PointwiseEmit& e) { return kir::exp(e.x[0]); },
       .forward = kTranscendental, .backward = kTranscendental, .test = on(-3, 3)},
      {.kind = OpKind::Log, .name = "log", .arity = 1, .category = P, .shape = S::unary_float, .vjp = V::log,
       .scalar = [](const Node&, std::span<const double> x) { return std::log(x[0]); },
       .formula = [](const PointwiseEmit& e) { return kir::log(e.x[0]); },
       .forward = {1e-5, 1e-12, "log is 3 ulp, or 2^-21 absolute for arguments near 1"},
       .backward = kTranscendental, .test = on(0.1, 3)},
      {.kind = OpKind::Sqrt, .name = "sqrt", .arity = 1, .category = P, .shape = S::unary_float, .vjp = V::sqrt,
       .scalar = [](const Node&, std::span<const double> x) { return std::sqrt(x[0]); },
       .formula = [](const PointwiseEmit& e) { return kir::sqrt(e.x[0]); },
       .forward = {2e-6, 1e-14, "sqrt is 3 ulp on Vulkan (an inverse square root and a multiply)"},
       .backward = {1e-5, 1e-13, "0.5 / sqrt(x): a square root and a division"}, .test = on(0.1, 3)},
      {.kind = OpKind::Tanh, .name = "tanh", .arity = 1, .category = P, .shape = S::unary_float, .vjp = V::tanh,
       .scalar = [](const Node&, std::span<const double> x) { return std::tanh(x[0]); },
       .formula = [](const PointwiseEmit& e) { return kir::tanh(e.x[0]); },
       .forward = kTranscendental, .backward = kTranscendental, .test = on(-4, 4)},
      {.kind = OpKind::Sigmoid, .name = "sigmoid", .arity = 1, .category = P, .shape = S::unary_float,
       .vjp = V::sigmoid, .scalar = [](const Node&, std::span<const double> x) { return sigmoid_of(x[0]); },
       .formula = [](const PointwiseEmit& e) { return sigmoid_of(e.x[0]); },
       .forward = kTranscendental, .backward = kTranscendental, .test = on(-6, 6)},
      {.kind = OpKind::Relu, .name = "relu", .arity = 1, .category = P, .shape = S::unary_numeric, .vjp = V::relu,
       .scalar = [](const Node&, std::span<const double> x) { return std::isnan(x[0]) ? x[0] : (x[0] > 0 ? x[0] : 0.0); },
       // x <= 0 fails for a NaN, which passes (PyTorch's relu, and the reference above).
       .formula = [](const PointwiseEmit& e) { return kir::select(e.x[0] <= 0, kir::like(e.x[0], 0), e.x[0]); },
       .forward = kExact, .backward = kExact, .test = {.generate = true, .integers = true}},
      {.kind = OpKind::Silu, .name = "silu", .arity = 1, .category = P, .shape = S::unary_float, .vjp = V::silu,
       .scalar = [](const Node&, std::span<const double> x) { return x[0] * sigmoid_of(x[0]); },
       .formula = [](const PointwiseEmit& e) { return e.x[0] * sigmoid_of(e.x[0]); },
       .forward = kTranscendental, .backward = kTranscendental, .test = on(-6, 6)},
      {.kind = OpKind::Gelu, .name = "gelu", .arity = 1, .category = P, .shape = S::unary_float, .vjp = V::gelu,
       .scalar = [](const Node&, std::span<const double> x) { return gelu_ref(x[0]); },
       .formula = [](const PointwiseEmit& e) { return e.x[0] * gelu_gate(e.x[0]); },
       .forward = {2e-5, 1e-12, "tanh of a cubic, where the cubic's rounding is amplified by up to 3x"},
       .backward = {2e-5, 1e-12, "the derivative of the tanh form: tanh, its square and a cubic"}, .test = on(-5, 5)},

      // ---- ops without an enumerator: defined by their entry alone (ONNX's Abs Ceil Floor Sign Reciprocal).
      {.name = "abs", .arity = 1, .category = P, .shape = S::unary_numeric,
       // PyTorch's sgn(x) * g: zero at x = 0.
       .vjp = [](VjpContext& c) -> std::vector<Value> {
         Value x = input_of(c);
         return {c.g.mul(c.grad_out, c.g.op("sign", {x}))};
       },
       .scalar = [](const Node&, std::span<const double> x) { return std::abs(x[0]); },
       .formula = [](const PointwiseEmit& e) { return kir::abs(e.x[0]); },
       .forward = kExact, .backward = kExact, .test = {.generate = true, .integers = true}},
      {.name = "ceil", .arity = 1, .category = P, .shape = S::unary_float, .vjp = zero_grad,
       .scalar = [](const Node&, std::span<const double> x) { return std::ceil(x[0]); },
       .formula = [](const PointwiseEmit& e) { return -kir::floor(-e.x[0]); },
       .forward = kExact, .backward = kCopy, .test = on(-5, 5)},
      {.name = "floor", .arity = 1, .category = P, .shape = S::unary_float, .vjp = zero_grad,
       .scalar = [](const Node&, std::span<const double> x) { return std::floor(x[0]); },
       .formula = [](const PointwiseEmit& e) { return kir::floor(e.x[0]); },
       .forward = kExact, .backward = kCopy, .test = on(-5, 5)},
      // -1, 0 or 1 (NaN stays NaN, as in PyTorch and numpy).
      {.name = "sign", .arity = 1, .category = P, .shape = S::unary_numeric, .vjp = zero_grad,
       .scalar = [](const Node&, std::span<const double> x) {
         return std::isnan(x[0]) ? x[0] : double((x[0] > 0) - (x[0] < 0));
       },
       .formula = [](const PointwiseEmit& e) {
         Val x = e.x[0];
         Val s = kir::select(x > 0, kir::like(x, 1), kir::select(x < 0, kir::like(x, -1), kir::like(x, 0)));
         return kir::select(x != x, x, s);  // NaN is the only value unequal to itself
       },
       .forward = kCopy, .backward = kCopy, .test = {.generate = true, .integers = true}},
      {.name = "reciprocal", .arity = 1, .category = P, .shape = S::unary_float,
       .vjp = [](VjpContext& c) -> std::vector<Value> {  // d(1/x) = -g / x^2 = -g y^2
         return {c.g.neg(c.g.mul(c.grad_out, c.g.mul(c.out, c.out)))};
       },
       .scalar = [](const Node&, std::span<const double> x) { return 1.0 / x[0]; },
       .formula = [](const PointwiseEmit& e) { return 1.0 / e.x[0]; },
       .forward = {2e-6, 1e-14, "division is 2.5 ulp on Vulkan (not correctly rounded on GPUs)"},
       .backward = {1e-5, 1e-13, "a division and two products"},
       .test = {.generate = true, .inputs = {{0.5, 2, true}}}},
  };
}

}  // namespace spire::graph::ops
