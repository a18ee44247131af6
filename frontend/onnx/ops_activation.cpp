// Activations: Relu Sigmoid Tanh LeakyRelu PRelu Elu Selu HardSigmoid HardSwish Softplus Softsign Clip Erf.
#include <cmath>

#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

// where(x >= 0, x, neg) — the shape of LeakyRelu, PRelu, Elu, Selu.
Value where_nonneg(NodeContext& c, Value x, Value pos, Value neg) {
  auto& g = c.g();
  return g.where(g.compare(x, g.scalar(0.0, g.type(x).dtype), CompareMode::Ge), pos, neg);
}

}  // namespace

void register_activation_ops(OpTable& t) {
  t["Relu"] = {[](NodeContext& c) { c.set_output(0, c.g().relu(c.value(0))); },
               [](NodeContext& c) {  // (known at import: on the host, as the shape subgraphs fold)
                 graph::Tensor r = *c.constant(0);
                 for (double& v : r.data) v = v > 0 ? v : 0.0;
                 c.set_output(0, r.round_to_dtype());
               }};
  t["Sigmoid"] = {[](NodeContext& c) { c.set_output(0, c.g().sigmoid(c.float_value(0))); }, {}};
  t["Tanh"] = {[](NodeContext& c) { c.set_output(0, c.g().tanh(c.float_value(0))); }, {}};
  t["LeakyRelu"] = {[](NodeContext& c) {
                      c.set_output(0, c.g().op("leaky_relu", {c.float_value(0)},
                                               {{"alpha", double(c.attr_float("alpha", 0.01f))}}));
                    },
                    {}};
  t["PRelu"] = {[](NodeContext& c) {
                  const Value x = c.float_value(0);
                  c.set_output(0, where_nonneg(c, x, x, c.g().mul(x, c.value(1))));
                },
                {}};
  t["Elu"] = {[](NodeContext& c) {
                auto& g = c.g();
                const Value x = c.float_value(0);
                const double alpha = c.attr_float("alpha", 1.0f);
                c.set_output(0, where_nonneg(c, x, x, g.mul(g.sub(g.exp(x), 1.0), alpha)));
              },
              {}};
  t["Selu"] = {[](NodeContext& c) {
                 auto& g = c.g();
                 const Value x = c.float_value(0);
                 const double alpha = c.attr_float("alpha", 1.67326319217681884765625f);
                 const double gamma = c.attr_float("gamma", 1.05070102214813232421875f);
                 // ONNX: gamma * x for x > 0, gamma * alpha * (exp(x) - 1) otherwise.
                 const Value y = where_nonneg(c, x, x, g.mul(g.sub(g.exp(x), 1.0), alpha));
                 c.set_output(0, g.mul(y, gamma));
               },
               {}};
  t["HardSigmoid"] = {[](NodeContext& c) {
                        c.set_output(0, c.g().op("hard_sigmoid", {c.float_value(0)},
                                                 {{"alpha", double(c.attr_float("alpha", 0.2f))},
                                                  {"beta", double(c.attr_float("beta", 0.5f))}}));
                      },
                      {}};
  t["HardSwish"] = {[](NodeContext& c) { c.set_output(0, c.g().op("hard_swish", {c.float_value(0)})); }, {}};
  t["Softplus"] = {[](NodeContext& c) { c.set_output(0, c.g().op("softplus", {c.float_value(0)})); }, {}};
  t["Softsign"] = {[](NodeContext& c) {
                     auto& g = c.g();
                     const Value x = c.float_value(0);
                     c.set_output(0, g.div(x, g.add(g.maximum(x, g.neg(x)), 1.0)));
                   },
                   {}};
  t["Clip"] = {[](NodeContext& c) {
                 auto& g = c.g();
                 Value y = c.value(0);
                 const DType dt = c.type(0).dtype;
                 if (c.opset() < 11) {
                   if (c.attr("min")) y = g.maximum(y, g.scalar(c.attr_float("min", 0), dt));
                   if (c.attr("max")) y = g.minimum(y, g.scalar(c.attr_float("max", 0), dt));
                 } else {
                   if (c.has_input(1)) y = g.maximum(y, c.value(1));
                   if (c.has_input(2)) y = g.minimum(y, c.value(2));
                 }
                 c.set_output(0, y);
               },
               {}};
  t["Erf"] = {[](NodeContext& c) { c.set_output(0, c.g().op("erf", {c.float_value(0)})); }, {}};
  t["ThresholdedRelu"] = {[](NodeContext& c) {
                            auto& g = c.g();
                            const Value x = c.float_value(0);
                            const DType dt = c.type(0).dtype;
                            const Value above = g.compare(x, g.scalar(c.attr_float("alpha", 1.0f), dt), CompareMode::Gt);
                            c.set_output(0, g.where(above, x, g.scalar(0.0, dt)));
                          },
                          {}};
  t["Celu"] = {[](NodeContext& c) {
                 auto& g = c.g();
                 const Value x = c.float_value(0);
                 const double alpha = c.attr_float("alpha", 1.0f);
                 // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
                 const Value e = g.mul(g.sub(g.exp(g.div(x, alpha)), 1.0), alpha);
                 c.set_output(0, where_nonneg(c, x, x, e));
               },
               {}};
  t["Mish"] = {[](NodeContext& c) {
                 auto& g = c.g();
                 const Value x = c.float_value(0);
                 c.set_output(0, g.mul(x, g.tanh(g.log(g.add(g.exp(x), 1.0)))));
               },
               {}};
  t["Shrink"] = {[](NodeContext& c) {
                   auto& g = c.g();
                   const Value x = c.float_value(0);
                   const DType dt = c.type(0).dtype;
                   const double lambd = c.attr_float("lambd", 0.5f), bias = c.attr_float("bias", 0.0f);
                   const Value lo = g.compare(x, g.scalar(-lambd, dt), CompareMode::Lt);
                   const Value hi = g.compare(x, g.scalar(lambd, dt), CompareMode::Gt);
                   c.set_output(0, g.where(lo, g.add(x, bias), g.where(hi, g.sub(x, bias), g.scalar(0.0, dt))));
                 },
                 {}};
}

}  // namespace spire::onnx_import
