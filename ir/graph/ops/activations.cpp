// Activations that ONNX exports name (PyTorch's hardsigmoid, hardswish, leaky_relu, softplus, and erf from the
// exact GELU). None has an OpKind enumerator: each is defined by its entry alone.
#include "ir/graph/ops/common.h"

#include <utility>

namespace spire::graph::ops {

namespace {

// erfc(|x|) to a relative error below 1.2e-7 everywhere: Chebyshev fit t exp(-x^2 + P(t)), t = 1 / (1 + |x|/2)
// (Numerical Recipes' erfcc). Written once for both the device formula and no other use: the reference uses
// std::erf, so the harness checks the fit against the real function.
Val erfc_of_abs(Val ax) {
  Val t = 1.0 / (1.0 + 0.5 * ax);
  const double c[] = {-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                      0.27886807,  -1.13520398, 1.48851587, -0.82215223, 0.17087277};
  Val p = kir::like(ax, c[9]);
  for (int k = 8; k >= 0; --k) p = c[k] + t * p;  // Horner
  return t * kir::exp(-ax * ax + p);
}

double hard_sigmoid_ref(const Node& n, double x) {
  const double v = n.attrs.get_float("alpha") * x + n.attrs.get_float("beta");
  return std::isnan(v) ? v : std::max(0.0, std::min(1.0, v));
}

Val clamp01(Val v) { return kir::min(kir::max(v, kir::like(v, 0)), kir::like(v, 1)); }

}  // namespace

std::vector<OpInfo> activations() {
  const OpCategory P = OpCategory::Pointwise;
  return {
      // ONNX HardSigmoid: max(0, min(1, alpha x + beta)); PyTorch's hardsigmoid is alpha 1/6, beta 1/2.
      {.name = "hard_sigmoid", .arity = 1, .attrs = {{"alpha", K::Float}, {"beta", K::Float}}, .category = P,
       .shape = S::unary_float,
       .vjp = [](VjpContext& c) -> std::vector<Value> {  // alpha g inside the linear part, 0 outside
         Graph& g = c.g;
         Value x = input_of(c);
         const double alpha = g.node(c.out).attrs.get_float("alpha"), beta = g.node(c.out).attrs.get_float("beta");
         const DType t = g.type(x).dtype;
         Value zero = g.scalar(0.0, t);
         if (alpha == 0) return {g.mul(c.grad_out, zero)};
         // The linear part is lo < x < hi, tested on x itself: alpha x + beta rounded to x's dtype (f16, bf16)
         // would land on 0 or 1 for x just inside and drop the gradient there.
         double lo = -beta / alpha, hi = (1 - beta) / alpha;
         if (alpha < 0) std::swap(lo, hi);
         Value inside_hi = g.where(g.compare(x, g.scalar(hi, t), CompareMode::Lt), g.mul(c.grad_out, alpha), zero);
         return {g.where(g.compare(x, g.scalar(lo, t), CompareMode::Gt), inside_hi, zero)};
       },
       .scalar = [](const Node& n, std::span<const double> x) { return hard_sigmoid_ref(n, x[0]); },
       .formula = [](const PointwiseEmit& e) {
         return clamp01(e.node.attrs.get_float("alpha") * e.x[0] + e.node.attrs.get_float("beta"));
       },
       .forward = {1e-6, 1e-14, "a multiply-add and a clamp"}, .backward = kExact,
       .test = {.generate = true, .inputs = {{-4, 4}}, .attrs = {{"alpha", 1.0 / 6}, {"beta", 0.5}}}},
      // x * hard_sigmoid(x) with PyTorch's constants: x * clamp(x / 6 + 1/2, 0, 1).
      {.name = "hard_swish", .arity = 1, .category = P, .shape = S::unary_float,
       .vjp = [](VjpContext& c) -> std::vector<Value> {  // PyTorch: 0 below -3, g above 3, g (2x + 3) / 6 between
         Graph& g = c.g;
         Value x = input_of(c);
         const DType t = g.type(x).dtype;
         Value mid = g.mul(c.grad_out, g.div(g.add(g.mul(x, 2.0), 3.0), 6.0));
         Value upper = g.where(g.compare(x, g.scalar(3.0, t), CompareMode::Gt), c.grad_out, mid);
         return {g.where(g.compare(x, g.scalar(-3.0, t), CompareMode::Lt), g.scalar(0.0, t), upper)};
       },
       .scalar = [](const Node&, std::span<const double> x) {
         return x[0] * std::max(0.0, std::min(1.0, x[0] / 6.0 + 0.5));
       },
       .formula = [](const PointwiseEmit& e) { return e.x[0] * clamp01(e.x[0] / 6.0 + 0.5); },
       .forward = {1e-6, 1e-14, "a division, an add, a clamp and a product"},
       .backward = {1e-6, 1e-14, "a few correctly rounded operations"}, .test = {.generate = true, .inputs = {{-5, 5}}}},
      // x for x >= 0, alpha x below (ONNX default alpha 0.01, as PyTorch's).
      {.name = "leaky_relu", .arity = 1, .attrs = {{"alpha", K::Float}}, .category = P, .shape = S::unary_float,
       .vjp = [](VjpContext& c) -> std::vector<Value> {  // PyTorch: g where x > 0, alpha g elsewhere
         Graph& g = c.g;
         Value x = input_of(c);
         const double alpha = g.node(c.out).attrs.get_float("alpha");
         const DType t = g.type(x).dtype;
         return {g.where(g.compare(x, g.scalar(0.0, t), CompareMode::Gt), c.grad_out, g.mul(c.grad_out, alpha))};
       },
       .scalar = [](const Node& n, std::span<const double> x) {
         return x[0] >= 0 ? x[0] : n.attrs.get_float("alpha") * x[0];
       },
       .formula = [](const PointwiseEmit& e) {
         return kir::select(e.x[0] >= 0, e.x[0], e.node.attrs.get_float("alpha") * e.x[0]);
       },
       .forward = kExact, .backward = kExact, .test = {.generate = true, .attrs = {{"alpha", 0.01}}}},
      // log(1 + exp(x)), computed as max(x, 0) + log(1 + exp(-|x|)) so that large |x| neither overflows nor
      // loses x.
      {.name = "softplus", .arity = 1, .category = P, .autocast_f32 = true, .shape = S::unary_float,
       .vjp = [](VjpContext& c) -> std::vector<Value> { return {c.g.mul(c.grad_out, c.g.sigmoid(input_of(c)))}; },
       .scalar = [](const Node&, std::span<const double> x) {
         return std::max(x[0], 0.0) + std::log1p(std::exp(-std::abs(x[0])));
       },
       .formula = [](const PointwiseEmit& e) {
         return kir::max(e.x[0], kir::like(e.x[0], 0)) + kir::log(1.0 + kir::exp(-kir::abs(e.x[0])));
       },
       .forward = {1e-5, 1e-12, "exp and log of a value near 1 (log is 2^-21 absolute there)"},
       .backward = kTranscendental, .test = {.generate = true, .inputs = {{-8, 8}}}},
      {.name = "erf", .arity = 1, .category = P, .shape = S::unary_float,
       .vjp = [](VjpContext& c) -> std::vector<Value> {  // 2 / sqrt(pi) exp(-x^2) g
         Graph& g = c.g;
         Value x = input_of(c);
         return {g.mul(c.grad_out, g.mul(g.exp(g.neg(g.mul(x, x))), 1.1283791670955126))};
       },
       .scalar = [](const Node&, std::span<const double> x) { return std::erf(x[0]); },
       .formula = [](const PointwiseEmit& e) {
         Val r = 1.0 - erfc_of_abs(kir::abs(e.x[0]));
         return kir::select(e.x[0] < 0, -r, r);
       },
       // The same bound in f64: the fit, not the arithmetic, limits it.
       .forward = {2e-6, 2e-6, "a Chebyshev fit of erfc accurate to 1.2e-7 relative, in either precision"},
       .backward = kTranscendental, .test = {.generate = true, .inputs = {{-3, 3}}}},
  };
}

}  // namespace spire::graph::ops
