// Elementwise arithmetic, comparison, selection and casts: Add Sub Mul Div Pow Max Min Sum Mean Equal
// Greater Less GreaterOrEqual LessOrEqual Not Where Cast Abs Neg Exp Log Sqrt Reciprocal Ceil Floor Sign.
#include <cmath>

#include <fmt/format.h>

#include "frontend/onnx/host_tensor.h"
#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

void same_dtype(NodeContext& c, int a, int b) {
  if (c.type(a).dtype != c.type(b).dtype)
    c.refuse(fmt::format("inputs {} and {} have different types ({} and {})", a, b, graph::dtype_name(c.type(a).dtype),
                         graph::dtype_name(c.type(b).dtype)));
}

// Binary ops with numpy broadcasting: `emit` builds the graph op, `host` folds constants.
void binary(OpTable& t, const std::string& op, std::function<Value(NodeContext&, Value, Value)> emit,
            std::function<double(double, double, DType)> host) {
  t[op] = {[emit](NodeContext& c) {
             same_dtype(c, 0, 1);
             c.set_output(0, emit(c, c.value(0), c.value(1)));
           },
           [host](NodeContext& c) {
             same_dtype(c, 0, 1);
             const DType dt = c.type(0).dtype;
             c.set_output(0, host_binary(*c.constant(0), *c.constant(1), dt,
                                         [&](double a, double b) { return host(a, b, dt); }));
           }};
}

void compare(OpTable& t, const std::string& op, CompareMode mode, std::function<bool(double, double)> host) {
  t[op] = {[mode](NodeContext& c) {
             same_dtype(c, 0, 1);
             c.set_output(0, c.g().compare(c.value(0), c.value(1), mode));
           },
           [host](NodeContext& c) {
             same_dtype(c, 0, 1);
             c.set_output(0, host_binary(*c.constant(0), *c.constant(1), DType::Bool,
                                         [&](double a, double b) { return host(a, b) ? 1.0 : 0.0; }));
           }};
}

// Unary float ops that map to one graph op.
void unary(OpTable& t, const std::string& op, Value (graph::Graph::*f)(Value)) {
  t[op] = {[f](NodeContext& c) {
             c.require_float(0);
             c.set_output(0, (c.g().*f)(c.value(0)));
           },
           {}};
}

// Variadic Sum/Mean/Max/Min: a chain of binary ops.
void variadic(OpTable& t, const std::string& op, Value (graph::Graph::*f)(Value, Value), bool mean) {
  t[op] = {[f, mean](NodeContext& c) {
             Value acc = c.value(0);
             for (int i = 1; i < c.num_inputs(); ++i) {
               same_dtype(c, 0, i);
               acc = (c.g().*f)(acc, c.value(i));
             }
             if (mean) {
               c.require_float(0);
               acc = c.g().div(acc, double(c.num_inputs()));
             }
             // A single input still yields a fresh value of the broadcast shape (here: itself).
             c.set_output(0, acc);
           },
           {}};
}

}  // namespace

void register_elementwise_ops(OpTable& t) {
  auto& G = t;
  binary(G, "Add", [](NodeContext& c, Value a, Value b) { return c.g().add(a, b); },
         [](double a, double b, DType) { return a + b; });
  binary(G, "Sub", [](NodeContext& c, Value a, Value b) { return c.g().sub(a, b); },
         [](double a, double b, DType) { return a - b; });
  binary(G, "Mul", [](NodeContext& c, Value a, Value b) { return c.g().mul(a, b); },
         [](double a, double b, DType) { return a * b; });
  binary(G, "Div",
         [](NodeContext& c, Value a, Value b) {
           if (!graph::is_float(c.g().type(a).dtype))
             c.refuse("integer Div computed at run time is not supported (spire's div is float-only)");
           return c.g().div(a, b);
         },
         [](double a, double b, DType dt) {
           if (graph::is_int(dt)) {
             if (b == 0) throw std::invalid_argument("integer division by zero");
             return std::trunc(a / b);
           }
           return a / b;
         });
  t["Pow"] = {[](NodeContext& c) {
                auto& g = c.g();
                const DType dt = c.type(0).dtype;
                if (dt == DType::Bool) c.refuse("Pow of bool");
                // spire's pow is float-only and takes one dtype; ONNX lets the exponent's type differ and
                // allows integer bases (computed in float here, then truncated back: exact for the small
                // integer powers float32 holds exactly).
                const DType ft = graph::is_float(dt) ? dt : DType::F32;
                Value b = c.value(0), e = c.value(1);
                if (dt != ft) b = g.cast(b, ft);
                if (c.type(1).dtype != ft) e = g.cast(e, ft);
                Value y = g.pow(b, e);
                c.set_output(0, dt == ft ? y : g.cast(y, dt));
              },
              {}};
  variadic(G, "Sum", &graph::Graph::add, false);
  variadic(G, "Mean", &graph::Graph::add, true);
  variadic(G, "Max", &graph::Graph::maximum, false);
  variadic(G, "Min", &graph::Graph::minimum, false);

  compare(G, "Equal", CompareMode::Eq, [](double a, double b) { return a == b; });
  compare(G, "Greater", CompareMode::Gt, [](double a, double b) { return a > b; });
  compare(G, "Less", CompareMode::Lt, [](double a, double b) { return a < b; });
  compare(G, "GreaterOrEqual", CompareMode::Ge, [](double a, double b) { return a >= b; });
  compare(G, "LessOrEqual", CompareMode::Le, [](double a, double b) { return a <= b; });
  t["Not"] = {[](NodeContext& c) {
                if (c.type(0).dtype != DType::Bool) c.refuse("Not takes a bool tensor");
                auto& g = c.g();
                c.set_output(0, g.compare(c.value(0), g.scalar(0.0, DType::Bool), CompareMode::Eq));
              },
              {}};

  // Boolean logic through where/compare: And(a, b) = a ? b : false, Or(a, b) = a ? true : b, Xor = a != b.
  auto logic = [&t](const std::string& op, int kind) {
    t[op] = {[kind](NodeContext& c) {
               if (c.type(0).dtype != DType::Bool || c.type(1).dtype != DType::Bool) c.refuse("inputs must be bool");
               auto& g = c.g();
               const Value a = c.value(0), b = c.value(1);
               if (kind == 2) return c.set_output(0, g.compare(a, b, CompareMode::Ne));
               const Value k = g.scalar(kind == 0 ? 0.0 : 1.0, DType::Bool);
               c.set_output(0, kind == 0 ? g.where(a, b, k) : g.where(a, k, b));
             },
             {}};
  };
  logic("And", 0);
  logic("Or", 1);
  logic("Xor", 2);
  t["IsNaN"] = {[](NodeContext& c) {
                  const Value x = c.value(0);
                  c.set_output(0, c.g().compare(x, x, CompareMode::Ne));
                },
                {}};
  t["IsInf"] = {[](NodeContext& c) {
                  auto& g = c.g();
                  c.require_float(0);
                  const Value x = c.value(0);
                  const DType dt = c.type(0).dtype;
                  const Value pos = g.compare(x, g.scalar(INFINITY, dt), CompareMode::Eq);
                  const Value neg = g.compare(x, g.scalar(-INFINITY, dt), CompareMode::Eq);
                  const Value f = g.scalar(0.0, DType::Bool);
                  const Value p = c.attr_int("detect_positive", 1) ? pos : g.constant(0.0, DType::Bool, c.type(0).shape);
                  c.set_output(0, c.attr_int("detect_negative", 1) ? g.where(neg, g.scalar(1.0, DType::Bool), p)
                                                                  : g.where(p, g.scalar(1.0, DType::Bool), f));
                },
                {}};
  // Trilu keeps the upper (or lower) triangle of the last two dims: a where with a constant mask.
  t["Trilu"] = {[](NodeContext& c) {
                  auto& g = c.g();
                  const graph::Shape s = c.type(0).shape;
                  if (s.size() < 2) c.refuse("the input needs rank >= 2");
                  int64_t k = 0;
                  if (c.has_input(1)) {
                    const auto ks = c.require_ints(1, "k");
                    if (ks.size() != 1) c.refuse("k must be one value");
                    k = ks[0];
                  }
                  const bool upper = c.attr_int("upper", 1) != 0;
                  const int64_t rows = s[s.size() - 2], cols = s.back();
                  Tensor mask(DType::Bool, {rows, cols});
                  for (int64_t i = 0; i < rows; ++i)
                    for (int64_t j = 0; j < cols; ++j) mask.data[size_t(i * cols + j)] = (upper ? j - i >= k : j - i <= k) ? 1 : 0;
                  c.set_output(0, g.where(c.constant_value(mask, "trilu_mask"), c.value(0),
                                          g.scalar(0.0, c.type(0).dtype)));
                },
                {}};

  t["Where"] = {[](NodeContext& c) {
                  if (c.type(0).dtype != DType::Bool) c.refuse("the condition must be bool");
                  same_dtype(c, 1, 2);
                  c.set_output(0, c.g().where(c.value(0), c.value(1), c.value(2)));
                },
                [](NodeContext& c) {
                  same_dtype(c, 1, 2);
                  c.set_output(0, host_where(*c.constant(0), *c.constant(1), *c.constant(2)));
                }};
  t["Cast"] = {[](NodeContext& c) {
                 const DType to = dtype_of_onnx(int(c.attr_int("to", 0)), "Cast's target type");
                 const Value x = c.value(0);
                 c.set_output(0, c.type(0).dtype == to ? x : c.g().cast(x, to));
               },
               [](NodeContext& c) {
                 c.set_output(0, host_cast(*c.constant(0), dtype_of_onnx(int(c.attr_int("to", 0)), "Cast's target type")));
               }};

  // Mod: x - y * trunc(x / y) with fmod=1 (C's fmod, the sign of x), x - y * floor(x / y) otherwise (Python's, the
  // sign of y; integers only). Computed in float64, where both are exact for the integers and the float32 and float16
  // values ONNX gives, then cast back.
  t["Mod"] = {[](NodeContext& c) {
                auto& g = c.g();
                const DType t = c.type(0).dtype;
                if (c.type(1).dtype != t) c.refuse("Mod's inputs must have the same type");
                if (t == DType::Bool) c.refuse("Mod of bool tensors");
                const bool fmod = c.attr_int("fmod", 0) != 0;
                if (!fmod && graph::is_float(t)) c.refuse("Mod of floats needs fmod=1 (ONNX)");
                auto wide = [&](int i) { return t == DType::F64 ? c.value(i) : g.cast(c.value(i), DType::F64); };
                const Value x = wide(0), y = wide(1), q = g.div(x, y);
                Value whole = g.op("floor", {q});
                if (fmod) whole = g.where(g.compare(q, g.scalar(0.0, DType::F64), graph::CompareMode::Lt), g.op("ceil", {q}), whole);
                const Value r = g.sub(x, g.mul(y, whole));
                c.set_output(0, t == DType::F64 ? r : g.cast(r, t));
              },
              {}};
  // Round: to the nearest integer, halves to even. From floor(x) and the exact fraction x - floor(x).
  t["Round"] = {[](NodeContext& c) {
                  c.require_float(0);
                  auto& g = c.g();
                  const DType t = c.type(0).dtype;
                  const Value x = c.value(0), r = g.op("floor", {x}), frac = g.sub(x, r);
                  const Value odd = g.sub(r, g.mul(g.op("floor", {g.div(r, 2.0)}), 2.0));  // 1 for odd r, else 0
                  const Value at_half = g.where(g.compare(frac, g.scalar(0.5, t), graph::CompareMode::Eq), g.add(r, odd), r);
                  c.set_output(0, g.where(g.compare(frac, g.scalar(0.5, t), graph::CompareMode::Gt), g.add(r, 1.0),
                                          at_half));
                },
                {}};
  // CastLike: Cast to the element type of input 1 (only its type is read).
  t["CastLike"] = {[](NodeContext& c) {
                     const DType to = c.type(1).dtype;
                     const Value x = c.value(0);
                     c.set_output(0, c.type(0).dtype == to ? x : c.g().cast(x, to));
                   },
                   {}};

  t["Neg"] = {[](NodeContext& c) { c.set_output(0, c.g().neg(c.value(0))); },
              [](NodeContext& c) {
                Tensor r = *c.constant(0);
                for (double& v : r.data) v = -v;
                c.set_output(0, r.round_to_dtype());
              }};
  // Ops of the graph's op table by name, one graph op each (ir/graph/ops/unary.cpp).
  for (auto [onnx_op, op] : {std::pair{"Abs", "abs"}, {"Sign", "sign"}})
    t[onnx_op] = {[op = op](NodeContext& c) { c.set_output(0, c.g().op(op, {c.value(0)})); }, {}};
  for (auto [onnx_op, op] : {std::pair{"Reciprocal", "reciprocal"}, {"Floor", "floor"}, {"Ceil", "ceil"},
                                {"Sin", "sin"}, {"Cos", "cos"}})
    t[onnx_op] = {[op = op](NodeContext& c) {
                    c.require_float(0);
                    c.set_output(0, c.g().op(op, {c.value(0)}));
                  },
                  {}};
  // Floor and Ceil of values known at import fold on the host, exactly: an expanded Range's trip count,
  // ceil((limit - start) / delta), is then known and its Loop unrolls.
  for (auto [onnx_op, f] : {std::pair{"Floor", +[](double v) { return std::floor(v); }},
                            std::pair{"Ceil", +[](double v) { return std::ceil(v); }}})
    t[onnx_op].fold = [f = f](NodeContext& c) {
      c.require_float(0);
      Tensor r = *c.constant(0);
      for (double& v : r.data) v = f(v);
      c.set_output(0, r.round_to_dtype());
    };
  unary(G, "Exp", &graph::Graph::exp);
  unary(G, "Log", &graph::Graph::log);
  unary(G, "Sqrt", &graph::Graph::sqrt);
}

}  // namespace spire::onnx_import
