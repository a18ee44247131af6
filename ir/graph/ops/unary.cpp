// Unary pointwise ops (float only unless the entry says numeric). Formulas follow PyTorch's CPU kernels, NaN
// included (relu propagates NaN).
#include "ir/graph/ops/common.h"

namespace spire::graph::ops {

namespace {

// gelu's tanh form: 0.5 x (1 + tanh(kBeta (x + kKappa x^3))), kBeta = sqrt(2 / pi).
constexpr double kBeta = 0.7978845608028654;
constexpr double kKappa = 0.044715;

// A zero gradient of the result's type (ceil, floor, sign: PyTorch's gradient is zero almost everywhere).
std::vector<Value> zero_grad(VjpContext& c) {
  const TensorType t = c.g.type(c.out);
  return {c.g.constant(0.0, t.dtype, t.shape)};
}

constexpr Tolerance kSinCos{1e-5, 1e-12, "an exact reduction by k pi/2, three roundings of the remainder, then a "
                                         "polynomial: a few ulp of 1"};

double gelu_ref(double v) { return 0.5 * v * (1.0 + std::tanh(kBeta * (v + kKappa * v * v * v))); }

// On devices through 1 + tanh(u) = 2 sigmoid(2u): the same function, but for very negative x it divides by a
// large number instead of cancelling 1 + tanh(u) ~ 1 - 1 in float32 (which loses every digit).
Val gelu_gate(Val x) { return 1.0 / (1.0 + kir::exp(-2.0 * (kBeta * (x + kKappa * x * x * x)))); }

// sin(x) (or cos(x) = sin(x + pi/2)) on devices, not through the drivers' sin and cos: Vulkan asks them for only
// 2^-11 absolute within [-pi, pi] and nothing outside it, while rotary embeddings take angles in the thousands.
// x = k pi/2 + r with k = round(x 2/pi) and |r| <= pi/4, where k pi/2 is subtracted in three parts whose products
// with k are exact (Cody and Waite; f32's parts as Cephes', f64's as fdlibm's); then the quadrant k mod 4 picks
// +-sin r or +-cos r, each a Taylor polynomial that reaches the type's precision on [-pi/4, pi/4] (f32: to r^9 and
// r^10; f64: to r^17 and r^18). k p1 is exact while k has no more bits than p1 leaves spare: |x| < 1e5 in f32 (an
// 8-bit p1), 1e9 in f64 (a 33-bit p1); beyond, the error grows with |x| but stays near the rounding of x itself.
Val sin_cos(Val x, bool cosine) {
  const bool f64 = x.type() == kir::Type::F64;
  const double p1 = f64 ? 1.57079632673412561417e+00 : 1.5703125;
  const double p2 = f64 ? 6.07710050630396597660e-11 : 4.837512969970703125e-4;
  const double p3 = f64 ? 2.02226624879595063154e-21 : 7.54978995489188216e-8;
  Val k = kir::floor(x * 0.63661977236758134308 + 0.5);
  Val r = ((x - k * p1) - k * p2) - k * p3;
  if (cosine) k = k + 1.0;                                // cos x = sin(x + pi/2): one quadrant on
  Val q = k - 4.0 * kir::floor(k * 0.25);                 // 0, 1, 2 or 3
  Val r2 = r * r;
  // Horner's rule over 1/n! with alternating signs, highest term first.
  auto series = [&](int first, int last) {                // sum_{n = first, first + 2, ..., last} (-1)^((n - first)/2) r^n / n!
    double fact = 1;
    for (int n = 2; n <= last; ++n) fact *= n;
    Val acc = kir::like(r, ((last - first) / 2 % 2 ? -1.0 : 1.0) / fact);
    for (int n = last - 2; n >= first; n -= 2) {
      fact /= double(n + 2) * double(n + 1);
      acc = acc * r2 + ((n - first) / 2 % 2 ? -1.0 : 1.0) / fact;
    }
    return acc;
  };
  Val sin_r = series(1, f64 ? 17 : 9) * r;
  Val cos_r = series(0, f64 ? 18 : 10);
  Val odd = q - 2.0 * kir::floor(q * 0.5);                // quadrants 1 and 3 take cos r
  Val v = kir::select(odd == 1.0, cos_r, sin_r);
  return kir::select(q >= 2.0, -v, v);
}

// atan(x) on devices (neither SPIR-V's GLSL set nor PTX has one that both share at full precision): |x| > 1 folds to
// pi/2 - atan(1/|x|), a remainder above tan(pi/8) moves to pi/4 + atan((t - 1) / (t + 1)), leaving |u| <= 0.4143,
// where the Taylor series u - u^3/3 + u^5/5 - ... reaches the type's precision by u^17 (f32) or u^41 (f64).
Val atan_of(Val x) {
  const bool f64 = x.type() == kir::Type::F64;
  Val a = kir::abs(x);
  Val big = a > 1.0;
  Val t = kir::select(big, 1.0 / a, a);
  Val mid = t > 0.41421356237309503;
  Val u = kir::select(mid, (t - 1.0) / (t + 1.0), t);
  Val z = u * u;
  const int last = f64 ? 20 : 8;  // the series' last term is (-1)^last u^(2 last + 1) / (2 last + 1)
  Val p = kir::like(u, (last % 2 ? -1.0 : 1.0) / double(2 * last + 1));
  for (int n = last - 1; n >= 0; --n) p = p * z + (n % 2 ? -1.0 : 1.0) / double(2 * n + 1);
  Val r = u * p;
  r = kir::select(mid, r + 0.78539816339744830962, r);
  r = kir::select(big, 1.57079632679489661923 - r, r);
  return kir::select(x < 0.0, -r, r);
}

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
      {.kind = OpKind::Exp, .name = "exp", .arity = 1, .category = P, .autocast_f32 = true, .shape = S::unary_float, .vjp = V::exp,
       .scalar = [](const Node&, std::span<const double> x) { return std::exp(x[0]); },
       .formula = [](const PointwiseEmit& e) { return kir::exp(e.x[0]); },
       .forward = kTranscendental, .backward = kTranscendental, .test = on(-3, 3)},
      {.kind = OpKind::Log, .name = "log", .arity = 1, .category = P, .autocast_f32 = true, .shape = S::unary_float, .vjp = V::log,
       .scalar = [](const Node&, std::span<const double> x) { return std::log(x[0]); },
       .formula = [](const PointwiseEmit& e) { return kir::log(e.x[0]); },
       .forward = {1e-5, 1e-12, "log is 3 ulp, or 2^-21 absolute for arguments near 1"},
       .backward = kTranscendental, .test = on(0.1, 3)},
      {.kind = OpKind::Sqrt, .name = "sqrt", .arity = 1, .category = P, .autocast_f32 = true, .shape = S::unary_float, .vjp = V::sqrt,
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

      // ---- ops without an enumerator: defined by their entry alone (ONNX's Abs Ceil Floor Sign Reciprocal Sin Cos).
      {.name = "sin", .arity = 1, .category = P, .shape = S::unary_float,
       .vjp = [](VjpContext& c) -> std::vector<Value> {
         return {c.g.mul(c.grad_out, c.g.op("cos", {input_of(c)}))};
       },
       .scalar = [](const Node&, std::span<const double> x) { return std::sin(x[0]); },
       .formula = [](const PointwiseEmit& e) { return sin_cos(e.x[0], false); },
       .forward = kSinCos, .backward = kSinCos, .test = on(-100, 100)},
      {.name = "cos", .arity = 1, .category = P, .shape = S::unary_float,
       .vjp = [](VjpContext& c) -> std::vector<Value> {
         return {c.g.neg(c.g.mul(c.grad_out, c.g.op("sin", {input_of(c)})))};
       },
       .scalar = [](const Node&, std::span<const double> x) { return std::cos(x[0]); },
       .formula = [](const PointwiseEmit& e) { return sin_cos(e.x[0], true); },
       .forward = kSinCos, .backward = kSinCos, .test = on(-100, 100)},
      // ONNX's Atan, and through identities its Asin and Acos (frontend/onnx/ops_trig.cpp).
      {.name = "atan", .arity = 1, .category = P, .shape = S::unary_float,
       .vjp = [](VjpContext& c) -> std::vector<Value> {
         Value x = input_of(c);
         return {c.g.div(c.grad_out, c.g.add(c.g.mul(x, x), 1.0))};
       },
       .scalar = [](const Node&, std::span<const double> x) { return std::atan(x[0]); },
       .formula = [](const PointwiseEmit& e) { return atan_of(e.x[0]); },
       .forward = {1e-5, 1e-12, "a reduction to |u| <= tan(pi/8) by one division and a series to the type's "
                                "precision: a few ulp of pi/2"},
       .backward = {1e-5, 1e-12, "the gradient divided by 1 + x^2: two roundings"}, .test = on(-20, 20)},
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
      {.name = "reciprocal", .arity = 1, .category = P, .autocast_f32 = true, .shape = S::unary_float,
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
