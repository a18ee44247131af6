// Ops whose results are known at import: Constant, ConstantOfShape, Range, EyeLike and the window functions (Hann,
// Hamming, Blackman). They always fold.
#include <cmath>

#include <fmt/format.h>

#include "frontend/onnx/host_tensor.h"
#include "frontend/onnx/node_context.h"
#include "frontend/onnx/tensor_proto.h"

namespace spire::onnx_import {
namespace {

void constant(NodeContext& c) {
  if (c.node().attribute_size() != 1) c.refuse("a Constant needs exactly one value attribute");
  const auto& a = c.node().attribute(0);
  const std::string& n = a.name();
  if (n == "value") c.set_output(0, read_tensor_proto(a.t(), {}, c.node().output(0)));
  else if (n == "value_float") c.set_output(0, Tensor::scalar(DType::F32, a.f()));
  else if (n == "value_int") c.set_output(0, Tensor::scalar(DType::I64, double(a.i())));
  else if (n == "value_floats") {
    std::vector<double> v(a.floats().begin(), a.floats().end());
    c.set_output(0, Tensor::from(DType::F32, {int64_t(v.size())}, v));
  } else if (n == "value_ints") {
    std::vector<double> v;
    for (int64_t x : a.ints()) v.push_back(double(x));
    c.set_output(0, Tensor::from(DType::I64, {int64_t(v.size())}, v));
  } else {
    c.refuse(fmt::format("attribute '{}' is not supported", n));
  }
}

void constant_of_shape(NodeContext& c) {
  const auto dims = c.require_ints(0, "the shape");
  checked_numel(dims);
  Tensor fill = Tensor::scalar(DType::F32, 0.0);
  if (const auto* a = c.attr("value")) {
    fill = read_tensor_proto(a->t(), {}, "value");
    if (fill.data.size() != 1) c.refuse("value must hold one element");
  }
  c.set_output(0, Tensor(fill.dtype, dims, fill.data[0]));
}

void range(NodeContext& c) {
  const Tensor& s = c.require_constant(0, "start");
  const Tensor& l = c.require_constant(1, "limit");
  const Tensor& d = c.require_constant(2, "delta");
  if (s.data.size() != 1 || l.data.size() != 1 || d.data.size() != 1) c.refuse("start, limit and delta must be scalars");
  const double start = s.data[0], limit = l.data[0], delta = d.data[0];
  if (delta == 0) c.refuse("delta is 0");
  const double n = std::max(0.0, std::ceil((limit - start) / delta));
  if (!(n <= double(kMaxHostElements))) c.refuse("the range is too long");
  std::vector<double> v;
  for (int64_t i = 0; i < int64_t(n); ++i) v.push_back(start + double(i) * delta);
  c.set_output(0, Tensor::from(s.dtype, {int64_t(v.size())}, v));
}

// HannWindow, HammingWindow, BlackmanWindow: sum_m a_m cos(2 pi m n / N) with signs alternating, for n in [0, size),
// N = size when periodic (the default) and size - 1 when symmetric; computed in double and rounded to output_datatype.
void window(NodeContext& c, std::vector<double> a) {
  const auto size = c.require_ints(0, "size");
  if (size.size() != 1) c.refuse("size must be one value");
  const int64_t n = size[0];
  if (n < 0 || n > kMaxHostElements) c.refuse(fmt::format("a window of {} elements", n));
  const DType dtype = dtype_of_onnx(int(c.attr_int("output_datatype", 1)), "output_datatype");
  if (!graph::is_float(dtype) && !graph::is_int(dtype)) c.refuse("output_datatype must be numeric");
  const double period = c.attr_int("periodic", 1) != 0 ? double(n) : double(n - 1);
  std::vector<double> v(size_t(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0, sign = 1;
    for (size_t m = 0; m < a.size(); ++m, sign = -sign)
      sum += sign * a[m] * (m == 0 ? 1.0 : std::cos(2.0 * M_PI * double(m) * double(i) / period));
    v[size_t(i)] = sum;
  }
  c.set_output(0, Tensor::from(dtype, {n}, v).round_to_dtype());
}

}  // namespace

// EyeLike: a 2-D constant of the input's shape (its dtype, or the dtype attribute) with ones on diagonal k.
void eye_like(NodeContext& c) {
  const graph::TensorType x = c.type(0);
  if (x.rank() != 2) c.refuse(fmt::format("EyeLike of a rank-{} input (it must be 2-D)", x.rank()));
  const graph::DType dtype = c.attr("dtype") ? dtype_of_onnx(int(c.attr_int("dtype", 0)), "EyeLike's dtype") : x.dtype;
  const int64_t k = c.attr_int("k", 0), rows = x.shape[0], cols = x.shape[1];
  std::vector<double> values(size_t(rows * cols), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols) values[size_t(i * cols + i + k)] = 1.0;
  c.set_output(0, Tensor::from(dtype, x.shape, values));
}

void register_constant_ops(OpTable& t) {
  t["EyeLike"] = {eye_like, eye_like};
  t["Constant"] = {constant, constant};
  t["ConstantOfShape"] = {constant_of_shape, constant_of_shape};
  t["Range"] = {range, range};
  auto windows = [&t](const std::string& op, std::vector<double> a) {
    auto f = [a](NodeContext& c) { window(c, a); };
    t[op] = {f, f};
  };
  windows("HannWindow", {0.5, 0.5});
  windows("HammingWindow", {25.0 / 46.0, 21.0 / 46.0});
  windows("BlackmanWindow", {0.42, 0.5, 0.08});
}

}  // namespace spire::onnx_import
