// Binary pointwise ops with numpy broadcasting; both inputs have the same dtype (no implicit promotion).
// add sub mul maximum minimum take f32 f64 i32 i64; div and pow are float only. Formulas follow PyTorch's CPU
// kernels, NaN included: maximum and minimum propagate NaN.
#include "ir/graph/ops/common.h"

namespace spire::graph::ops {

namespace {

double compare_ref(const Node& n, std::span<const double> x) {
  std::optional<CompareMode> mode = compare_mode_from_name(n.attrs.get_string("mode"));
  if (!mode) eval::fail(n, "unknown compare mode '" + n.attrs.get_string("mode") + "' (expected lt le gt ge eq ne)");
  // IEEE comparisons: every one with a NaN is false except ne, as in PyTorch.
  switch (*mode) {
    case CompareMode::Lt: return double(x[0] < x[1]);
    case CompareMode::Le: return double(x[0] <= x[1]);
    case CompareMode::Gt: return double(x[0] > x[1]);
    case CompareMode::Ge: return double(x[0] >= x[1]);
    case CompareMode::Eq: return double(x[0] == x[1]);
    case CompareMode::Ne: return double(x[0] != x[1]);
  }
  return kNaN;
}

Val compare_formula(const PointwiseEmit& e) {
  Val a = e.x[0], b = e.x[1];
  Val r;
  switch (*compare_mode_from_name(e.node.attrs.get_string("mode"))) {
    case CompareMode::Lt: r = a < b; break;
    case CompareMode::Le: r = a <= b; break;
    case CompareMode::Gt: r = a > b; break;
    case CompareMode::Ge: r = a >= b; break;
    case CompareMode::Eq: r = a == b; break;
    case CompareMode::Ne: r = a != b; break;
  }
  return from_bool(e.kb, r);
}

}  // namespace

std::vector<OpInfo> binary() {
  const TestDomain numeric{.generate = true, .integers = true};
  return {
      {.kind = OpKind::Add, .name = "add", .arity = 2, .category = OpCategory::Pointwise, .shape = S::binary,
       .vjp = V::add, .scalar = [](const Node&, std::span<const double> x) { return x[0] + x[1]; },
       .formula = [](const PointwiseEmit& e) { return e.x[0] + e.x[1]; },
       .forward = kExact, .backward = kSumBackward, .test = numeric},
      {.kind = OpKind::Sub, .name = "sub", .arity = 2, .category = OpCategory::Pointwise, .shape = S::binary,
       .vjp = V::sub, .scalar = [](const Node&, std::span<const double> x) { return x[0] - x[1]; },
       .formula = [](const PointwiseEmit& e) { return e.x[0] - e.x[1]; },
       .forward = kExact, .backward = kSumBackward, .test = numeric},
      {.kind = OpKind::Mul, .name = "mul", .arity = 2, .category = OpCategory::Pointwise, .shape = S::binary,
       .vjp = V::mul, .scalar = [](const Node&, std::span<const double> x) { return x[0] * x[1]; },
       .formula = [](const PointwiseEmit& e) { return e.x[0] * e.x[1]; },
       .forward = kExact, .backward = kSumBackward, .test = numeric},
      {.kind = OpKind::Div, .name = "div", .arity = 2, .category = OpCategory::Pointwise, .shape = S::binary_float,
       .vjp = V::div, .scalar = [](const Node&, std::span<const double> x) { return x[0] / x[1]; },
       .formula = [](const PointwiseEmit& e) { return e.x[0] / e.x[1]; },
       .forward = {2e-6, 1e-14, "division is 2.5 ulp on Vulkan (not correctly rounded on GPUs)"},
       .backward = {2e-5, 1e-13, "a / b^2 and sums over broadcast dims, each division 2.5 ulp"},
       // Divisors stay away from zero.
       .test = {.generate = true, .inputs = {{-1, 1}, {0.5, 2, true}}}},
      {.kind = OpKind::Pow, .name = "pow", .arity = 2, .category = OpCategory::Pointwise, .autocast_f32 = true,
       .shape = S::binary_float,
       .vjp = V::pow, .scalar = [](const Node&, std::span<const double> x) { return std::pow(x[0], x[1]); },
       .formula = [](const PointwiseEmit& e) { return kir::pow(e.x[0], e.x[1]); },
       .forward = {1e-5, 1e-12, "pow = exp(b log a) on GPUs: the error of log is multiplied by |b log a|"},
       .backward = {2e-5, 1e-12, "pow, log and products of them, summed over broadcast dims"},
       // A positive base: a negative one is NaN for most exponents.
       .test = {.generate = true, .inputs = {{0.5, 2}, {-2, 2}}}},
      {.kind = OpKind::Maximum, .name = "maximum", .arity = 2, .category = OpCategory::Pointwise,
       .shape = S::binary, .vjp = V::maximum,
       .scalar = [](const Node&, std::span<const double> x) {
         return (std::isnan(x[0]) || std::isnan(x[1])) ? kNaN : (x[0] > x[1] ? x[0] : x[1]);
       },
       .formula = [](const PointwiseEmit& e) { return kir::max(e.x[0], e.x[1]); },
       .forward = kExact, .backward = kSumBackward, .test = numeric},
      {.kind = OpKind::Minimum, .name = "minimum", .arity = 2, .category = OpCategory::Pointwise,
       .shape = S::binary, .vjp = V::minimum,
       .scalar = [](const Node&, std::span<const double> x) {
         return (std::isnan(x[0]) || std::isnan(x[1])) ? kNaN : (x[0] < x[1] ? x[0] : x[1]);
       },
       .formula = [](const PointwiseEmit& e) { return kir::min(e.x[0], e.x[1]); },
       .forward = kExact, .backward = kSumBackward, .test = numeric},
      // Cases in op_harness/cases_pointwise.cpp (every mode, ties).
      {.kind = OpKind::Compare, .name = "compare", .arity = 2, .attrs = {{"mode", K::String}},
       .category = OpCategory::Pointwise, .shape = S::compare, .scalar = compare_ref, .formula = compare_formula,
       .forward = kCopy, .backward = kCopy},
  };
}

}  // namespace spire::graph::ops
