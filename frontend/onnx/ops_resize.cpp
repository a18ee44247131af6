// Resize (opsets 10 to 18's attributes) and Upsample. Every mode, nearest, linear or cubic, under every coordinate
// transformation, maps each axis of the input linearly onto the same axis of the output: output[i] = sum_j
// W[i][j] input[j] (plus a constant where tf_crop_and_resize extrapolates). W is computed here, on the host, from the
// axis lengths and the attributes, following ONNX's reference implementation (the two, four or one neighbours of
// each output's source coordinate, their coefficients, edge padding, exclude_outside); each axis that W changes is then
// a product with its transposed W, last axis first as the reference nests them. Nearest rows are one-hot, so those
// products are exact; the others round once per product.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

struct ResizeAttrs {
  std::string mode = "nearest";                  // nearest, linear, cubic
  std::string coordinates = "half_pixel";        // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";    // nearest_mode
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

// The coefficients of the neighbours of a source coordinate whose fractional part is `ratio` (1 when it is whole).
std::vector<double> coefficients(const ResizeAttrs& a, double ratio) {
  if (a.mode == "linear") return {1 - ratio, ratio};
  if (a.mode == "cubic") {
    const double A = a.cubic_a, r = ratio, s = 1 - ratio;
    return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
            ((A + 2) * s - (A + 3)) * s * s + 1, ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
  }
  if (ratio == 1) return {0, 1};  // a whole coordinate: itself
  if (a.nearest == "round_prefer_ceil") return {double(ratio < 0.5), double(ratio >= 0.5)};
  if (a.nearest == "floor") return {1, 0};
  if (a.nearest == "ceil") return {0, 1};
  return {double(ratio <= 0.5), double(ratio > 0.5)};  // round_prefer_floor
}

// One axis: W [out][in] and the constant of each output row (its extrapolation, or 0).
struct AxisMap {
  std::vector<std::vector<double>> w;
  std::vector<double> constant;
  bool identity = true;
};

AxisMap axis_map(const ResizeAttrs& a, int64_t in, int64_t out, double scale, double roi_start, double roi_end) {
  AxisMap m;
  m.w.assign(size_t(out), std::vector<double>(size_t(in), 0.0));
  m.constant.assign(size_t(out), 0.0);
  const double out_width = scale * double(in);  // the reference's (unrounded) output length
  for (int64_t i = 0; i < out; ++i) {
    const double x = double(i);
    double src = 0;
    const std::string& c = a.coordinates;
    if (c == "align_corners") {
      src = out_width == 1 ? 0.0 : x * double(in - 1) / (out_width - 1);
    } else if (c == "asymmetric") {
      src = x / scale;
    } else if (c == "tf_crop_and_resize") {
      src = out_width == 1 ? (roi_end - roi_start) * double(in - 1) / 2
                           : x * (roi_end - roi_start) * double(in - 1) / (out_width - 1);
      src += roi_start * double(in - 1);
      if (src < 0 || src > double(in - 1)) {
        m.constant[size_t(i)] = a.extrapolation;
        m.identity = false;
        continue;
      }
    } else if (c == "pytorch_half_pixel") {
      src = out_width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    } else if (c == "tf_half_pixel_for_nn") {
      src = (x + 0.5) / scale;
    } else {  // half_pixel
      src = (x + 0.5) / scale - 0.5;
    }
    const double whole = std::floor(src);
    std::vector<double> coeff = coefficients(a, src == whole ? 1.0 : src - whole);
    const int64_t n = int64_t(coeff.size());
    // The n indices nearest src (ties to the lower), over the input padded by ceil(n / 2) edge copies each side.
    const int64_t pad = (n + 1) / 2;
    std::vector<int64_t> idx(size_t(in + 2 * pad));
    std::iota(idx.begin(), idx.end(), -pad);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t p, int64_t q) {
      return std::abs(src - double(p)) < std::abs(src - double(q));
    });
    idx.resize(size_t(n));
    std::sort(idx.begin(), idx.end());
    if (a.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (idx[size_t(k)] < 0 || idx[size_t(k)] >= in) coeff[size_t(k)] = 0;
        sum += coeff[size_t(k)];
      }
      for (double& v : coeff) v /= sum;
    }
    for (int64_t k = 0; k < n; ++k)
      m.w[size_t(i)][size_t(std::clamp<int64_t>(idx[size_t(k)], 0, in - 1))] += coeff[size_t(k)];
  }
  if (in != out) m.identity = false;
  for (int64_t i = 0; i < out && m.identity; ++i)
    for (int64_t j = 0; j < in; ++j) m.identity = m.identity && m.w[size_t(i)][size_t(j)] == double(i == j);
  return m;
}

// x with axis `axis` mapped by m: the axis moved last, a product with W^T [in, out], moved back, plus the constants.
Value apply_axis(NodeContext& c, Value x, int64_t axis, const AxisMap& m) {
  auto& g = c.g();
  const graph::TensorType t = g.type(x);
  const int64_t rank = t.rank(), in = t.shape[size_t(axis)], out = int64_t(m.w.size());
  const auto [to_last, back] = axis_last(rank, axis);
  graph::Tensor wt;
  wt.dtype = t.dtype;
  wt.shape = {in, out};
  for (int64_t j = 0; j < in; ++j)
    for (int64_t i = 0; i < out; ++i) wt.data.push_back(m.w[size_t(i)][size_t(j)]);
  Value y = g.matmul(axis == rank - 1 ? x : g.permute(x, to_last), c.constant_value(wt, "resize_weights"));
  if (axis != rank - 1) y = g.permute(y, back);
  if (std::any_of(m.constant.begin(), m.constant.end(), [](double v) { return v != 0; })) {
    graph::Tensor k;
    k.dtype = t.dtype;
    k.shape = Shape(size_t(rank), 1);
    k.shape[size_t(axis)] = out;
    k.data = m.constant;
    y = g.add(y, c.constant_value(k, "resize_extrapolation"));
  }
  return y;
}

void resize(NodeContext& c, bool upsample) {
  const graph::TensorType x = c.type(0);
  if (!graph::is_float(x.dtype))
    c.refuse(fmt::format("the input is {}; spire resizes float tensors", graph::dtype_name(x.dtype)));
  const int64_t rank = x.rank();
  ResizeAttrs a;
  a.mode = c.attr_string("mode", "nearest");
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic")
    c.refuse(fmt::format("mode '{}' (ONNX has nearest, linear and cubic)", a.mode));
  // Upsample and Resize-10 place the source coordinate at x / scale.
  a.coordinates = upsample || c.opset() < 11 ? "asymmetric" : c.attr_string("coordinate_transformation_mode", "half_pixel");
  a.nearest = upsample || c.opset() < 11 ? "floor" : c.attr_string("nearest_mode", "round_prefer_floor");
  a.cubic_a = c.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = c.attr_float("extrapolation_value", 0.0f);
  if (c.attr("antialias") && c.attr_int("antialias", 0) != 0) c.refuse("antialias (opset 18) is not supported");
  if (c.attr("axes")) c.refuse("the axes attribute (opset 18) is not supported");
  const int scales_input = upsample || c.opset() < 11 ? 1 : 2, sizes_input = upsample || c.opset() < 11 ? -1 : 3;
  std::vector<double> scales(size_t(rank), 1.0), roi;
  Shape out = x.shape;
  if (sizes_input > 0 && c.has_input(sizes_input)) {
    const std::vector<int64_t> sizes = c.require_ints(sizes_input, "sizes");
    if (int64_t(sizes.size()) != rank) c.refuse(fmt::format("{} sizes for a rank-{} input", sizes.size(), rank));
    for (int64_t d = 0; d < rank; ++d) {
      out[size_t(d)] = sizes[size_t(d)];
      scales[size_t(d)] = double(sizes[size_t(d)]) / double(x.shape[size_t(d)]);
    }
  } else if (c.has_input(scales_input)) {
    const graph::Tensor& s = c.require_constant(scales_input, "scales");
    if (int64_t(s.data.size()) != rank) c.refuse(fmt::format("{} scales for a rank-{} input", s.data.size(), rank));
    for (int64_t d = 0; d < rank; ++d) {
      scales[size_t(d)] = s.data[size_t(d)];
      if (!(scales[size_t(d)] > 0)) c.refuse(fmt::format("scale {} must be positive", scales[size_t(d)]));
      out[size_t(d)] = int64_t(std::floor(double(x.shape[size_t(d)]) * scales[size_t(d)]));
    }
  } else {
    c.refuse("neither scales nor sizes is given");
  }
  if (a.coordinates == "tf_crop_and_resize") {
    const graph::Tensor& r = c.require_constant(1, "roi");
    if (int64_t(r.data.size()) != 2 * rank) c.refuse(fmt::format("roi holds {} values; it needs {}", r.data.size(), 2 * rank));
    roi = r.data;
  }
  Value y = c.value(0);
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (out[size_t(d)] < 1 || out[size_t(d)] > (int64_t(1) << 24))
      c.refuse(fmt::format("the output would have {} elements along axis {}", out[size_t(d)], d));
    if (out[size_t(d)] * x.shape[size_t(d)] > (int64_t(1) << 26))
      c.refuse(fmt::format("resizing axis {} from {} to {} takes a {}x{} matrix, past spire's 2^26 elements", d,
                           x.shape[size_t(d)], out[size_t(d)], out[size_t(d)], x.shape[size_t(d)]));
    const AxisMap m = axis_map(a, x.shape[size_t(d)], out[size_t(d)], scales[size_t(d)],
                               roi.empty() ? 0.0 : roi[size_t(d)], roi.empty() ? 1.0 : roi[size_t(rank + d)]);
    if (!m.identity) y = apply_axis(c, y, d, m);
  }
  c.set_output(0, y);
}

}  // namespace

void register_resize_ops(OpTable& t) {
  t["Resize"] = {[](NodeContext& c) { resize(c, false); }, {}};
  t["Upsample"] = {[](NodeContext& c) { resize(c, true); }, {}};
}

}  // namespace spire::onnx_import
