// Trigonometric and hyperbolic ops beyond Sin and Cos: Tan Sinh Cosh Asinh Acosh Atanh Atan Asin Acos, each the
// textbook identity over graph ops spire has (sin, cos, atan, exp, log, sqrt). The identities lose a little near their cancellations
// (sinh and asinh close to 0 lose relative, never absolute, accuracy: a few float32 units of 1e-7), far inside the
// node tests' tolerance; the float64 evaluator computes the same identities in double.
#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

// tan x = sin x / cos x.
Value tan(graph::Graph& g, Value x) { return g.div(g.op("sin", {x}), g.op("cos", {x})); }

// sinh x = (e^x - e^-x) / 2, cosh x = (e^x + e^-x) / 2.
Value sinh(graph::Graph& g, Value x) { return g.mul(g.sub(g.exp(x), g.exp(g.neg(x))), 0.5); }
Value cosh(graph::Graph& g, Value x) { return g.mul(g.add(g.exp(x), g.exp(g.neg(x))), 0.5); }

// asinh x = sign(x) log(|x| + sqrt(x^2 + 1)): odd by construction, so the large negative x that would cancel in
// log(x + sqrt(x^2 + 1)) takes the positive branch.
Value asinh(graph::Graph& g, Value x) {
  const Value a = g.op("abs", {x});
  const Value y = g.log(g.add(a, g.sqrt(g.add(g.mul(a, a), 1.0))));
  return g.mul(g.op("sign", {x}), y);
}

// acosh x = log(x + sqrt(x^2 - 1)), x >= 1 (NaN below, as ONNX).
Value acosh(graph::Graph& g, Value x) { return g.log(g.add(x, g.sqrt(g.sub(g.mul(x, x), 1.0)))); }

// atanh x = log((1 + x) / (1 - x)) / 2, |x| < 1.
Value atanh(graph::Graph& g, Value x) {
  const Value one = g.scalar(1.0, g.type(x).dtype);
  return g.mul(g.log(g.div(g.add(one, x), g.sub(one, x))), 0.5);
}

// Atan is the graph's atan op; asin x = atan(x / sqrt((1 - x)(1 + x))) (the factored form keeps 1 - x^2 exact near
// |x| = 1, where it reaches +-pi/2 through atan(+-inf)); acos x = 2 atan(sqrt((1 - x) / (1 + x))), which keeps its
// relative precision near x = 1 where pi/2 - asin x would cancel.
Value atan(graph::Graph& g, Value x) { return g.op("atan", {x}); }
Value asin(graph::Graph& g, Value x) {
  const Value one = g.scalar(1.0, g.type(x).dtype);
  return g.op("atan", {g.div(x, g.sqrt(g.mul(g.sub(one, x), g.add(one, x))))});
}
Value acos(graph::Graph& g, Value x) {
  const Value one = g.scalar(1.0, g.type(x).dtype);
  return g.mul(g.op("atan", {g.sqrt(g.div(g.sub(one, x), g.add(one, x)))}), 2.0);
}

void unary(OpTable& t, const std::string& op, Value (*f)(graph::Graph&, Value)) {
  t[op] = {[f](NodeContext& c) { c.set_output(0, f(c.g(), c.float_value(0))); }, {}};
}

}  // namespace

void register_trig_ops(OpTable& t) {
  unary(t, "Tan", tan);
  unary(t, "Sinh", sinh);
  unary(t, "Cosh", cosh);
  unary(t, "Asinh", asinh);
  unary(t, "Acosh", acosh);
  unary(t, "Atanh", atanh);
  unary(t, "Atan", atan);
  unary(t, "Asin", asin);
  unary(t, "Acos", acos);
}

}  // namespace spire::onnx_import
