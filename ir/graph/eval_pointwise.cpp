// Elementwise ops: binary arithmetic with numpy broadcasting, compare, where, cast, the unary activations and
// their backward ops. Formulas follow PyTorch's CPU kernels, NaN behaviour included (maximum, minimum and
// relu propagate NaN; relu_grad passes the gradient unless x <= 0, as threshold_backward does).
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "ir/graph/eval_ops.h"

namespace spire::graph::eval {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// gelu's tanh form: 0.5 x (1 + tanh(kBeta (x + kKappa x^3))), kBeta = sqrt(2 / pi).
const double kBeta = std::sqrt(2.0 / M_PI);
constexpr double kKappa = 0.044715;

double sigmoid_of(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// out[i] = f(a[i'], b[i'']) over the broadcast of a and b to the result shape.
template <class F>
Tensor broadcast_binary(const Node& n, const Tensor& a, const Tensor& b, F&& f) {
  Tensor out = result_of(n);
  const std::vector<int64_t> sa = broadcast_strides(a.shape, out.shape);
  const std::vector<int64_t> sb = broadcast_strides(b.shape, out.shape);
  const double* pa = a.data.data();
  const double* pb = b.data.data();
  double* po = out.data.data();
  for_each_index<2>(out.shape, {&sa, &sb},
                    [&](int64_t i, const std::array<int64_t, 2>& off) { po[i] = f(pa[off[0]], pb[off[1]]); });
  return out;
}

}  // namespace

Tensor binary(const Node& n, Inputs in) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  switch (n.op) {
    case OpKind::Add: return broadcast_binary(n, a, b, [](double x, double y) { return x + y; });
    case OpKind::Sub: return broadcast_binary(n, a, b, [](double x, double y) { return x - y; });
    case OpKind::Mul: return broadcast_binary(n, a, b, [](double x, double y) { return x * y; });
    case OpKind::Div: return broadcast_binary(n, a, b, [](double x, double y) { return x / y; });
    case OpKind::Pow: return broadcast_binary(n, a, b, [](double x, double y) { return std::pow(x, y); });
    case OpKind::Maximum:
      return broadcast_binary(n, a, b, [](double x, double y) {
        return (std::isnan(x) || std::isnan(y)) ? kNaN : (x > y ? x : y);
      });
    case OpKind::Minimum:
      return broadcast_binary(n, a, b, [](double x, double y) {
        return (std::isnan(x) || std::isnan(y)) ? kNaN : (x < y ? x : y);
      });
    default: fail(n, "not a binary elementwise op");
  }
}

Tensor compare(const Node& n, Inputs in) {
  const std::string& mode_name = n.attrs.get_string("mode");
  std::optional<CompareMode> mode = compare_mode_from_name(mode_name);
  if (!mode) fail(n, "unknown compare mode '" + mode_name + "' (expected lt le gt ge eq ne)");
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  // IEEE comparisons: every one with a NaN is false except ne, as in PyTorch.
  switch (*mode) {
    case CompareMode::Lt: return broadcast_binary(n, a, b, [](double x, double y) { return double(x < y); });
    case CompareMode::Le: return broadcast_binary(n, a, b, [](double x, double y) { return double(x <= y); });
    case CompareMode::Gt: return broadcast_binary(n, a, b, [](double x, double y) { return double(x > y); });
    case CompareMode::Ge: return broadcast_binary(n, a, b, [](double x, double y) { return double(x >= y); });
    case CompareMode::Eq: return broadcast_binary(n, a, b, [](double x, double y) { return double(x == y); });
    case CompareMode::Ne: return broadcast_binary(n, a, b, [](double x, double y) { return double(x != y); });
  }
  fail(n, "unknown compare mode");
}

Tensor where(const Node& n, Inputs in) {
  const Tensor& cond = *in[0];
  const Tensor& a = *in[1];
  const Tensor& b = *in[2];
  Tensor out = result_of(n);
  const std::vector<int64_t> sc = broadcast_strides(cond.shape, out.shape);
  const std::vector<int64_t> sa = broadcast_strides(a.shape, out.shape);
  const std::vector<int64_t> sb = broadcast_strides(b.shape, out.shape);
  for_each_index<3>(out.shape, {&sc, &sa, &sb}, [&](int64_t i, const std::array<int64_t, 3>& off) {
    out.data[size_t(i)] = cond.data[size_t(off[0])] != 0 ? a.data[size_t(off[1])] : b.data[size_t(off[2])];
  });
  return out;
}

Tensor cast(const Node& n, Inputs in) {
  const Tensor& x = *in[0];
  const DType to = n.type.dtype;
  Tensor out = result_of(n);
  for (size_t i = 0; i < x.data.size(); ++i) {
    const double v = x.data[i];
    if (is_int(to) && !std::isfinite(v))
      fail(n, fmt::format("cannot cast {} (element {}) to {}", v, i, dtype_name(to)));
    // To int: truncation toward zero; to bool: v != 0 (NaN is true, as in PyTorch); between floats the value
    // is kept, and evaluate() rounds it to the compute precision like every float result.
    out.data[i] = to == DType::Bool ? double(v != 0) : is_int(to) ? std::trunc(v) : v;
  }
  return out;
}

namespace {
template <class F>
Tensor map_unary(const Node& n, const Tensor& x, F&& f) {
  Tensor out = result_of(n);
  for (size_t i = 0; i < x.data.size(); ++i) out.data[i] = f(x.data[i]);
  return out;
}

template <class F>
Tensor map_grad(const Node& n, const Tensor& grad, const Tensor& x, F&& f) {
  Tensor out = result_of(n);
  for (size_t i = 0; i < x.data.size(); ++i) out.data[i] = f(grad.data[i], x.data[i]);
  return out;
}
}  // namespace

Tensor unary(const Node& n, Inputs in) {
  const Tensor& x = *in[0];
  switch (n.op) {
    case OpKind::Neg: return map_unary(n, x, [](double v) { return -v; });
    case OpKind::Exp: return map_unary(n, x, [](double v) { return std::exp(v); });
    case OpKind::Log: return map_unary(n, x, [](double v) { return std::log(v); });
    case OpKind::Sqrt: return map_unary(n, x, [](double v) { return std::sqrt(v); });
    case OpKind::Tanh: return map_unary(n, x, [](double v) { return std::tanh(v); });
    case OpKind::Sigmoid: return map_unary(n, x, [](double v) { return sigmoid_of(v); });
    case OpKind::Relu: return map_unary(n, x, [](double v) { return std::isnan(v) ? v : (v > 0 ? v : 0.0); });
    case OpKind::Silu: return map_unary(n, x, [](double v) { return v * sigmoid_of(v); });
    case OpKind::Gelu:
      return map_unary(n, x, [](double v) { return 0.5 * v * (1.0 + std::tanh(kBeta * (v + kKappa * v * v * v))); });
    default: fail(n, "not a unary elementwise op");
  }
}

Tensor unary_grad(const Node& n, Inputs in) {
  const Tensor& grad = *in[0];
  const Tensor& x = *in[1];
  if (grad.shape != x.shape)
    fail(n, "gradient " + grad.type().to_string() + " and input " + x.type().to_string() + " differ in shape");
  switch (n.op) {
    case OpKind::ReluGrad:
      return map_grad(n, grad, x, [](double g, double v) { return v <= 0 ? 0.0 : g; });
    case OpKind::SiluGrad:
      // d/dx x s(x) = s (1 + x (1 - s)).
      return map_grad(n, grad, x, [](double g, double v) {
        const double s = sigmoid_of(v);
        return g * s * (1.0 + v * (1.0 - s));
      });
    case OpKind::GeluGrad:
      // d/dx 0.5 x (1 + t), t = tanh(u), u = kBeta (x + kKappa x^3):
      //   0.5 (1 + t) + 0.5 x (1 - t^2) kBeta (1 + 3 kKappa x^2).
      return map_grad(n, grad, x, [](double g, double v) {
        const double t = std::tanh(kBeta * (v + kKappa * v * v * v));
        return g * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * kBeta * (1.0 + 3.0 * kKappa * v * v));
      });
    default: fail(n, "not an activation gradient op");
  }
}

}  // namespace spire::graph::eval
