// The 2-D poolings and their gradients, each wholly defined here: shape rules, VJPs, float64 references,
// costs and tolerances. Their lowering is lowering/lower_pool2d.cpp, their harness cases
// op_harness/cases_pool2d.cpp.
//
//   max_pool2d(x [N,C,H,W]; kernel, stride, padding (2 ints each)), floor mode
//   avg_pool2d(x; the same attrs); padding counts in the divisor (PyTorch's count_include_pad=True)
//   max_pool2d_argmax(x; pool attrs) -> i32 [N,C,Ho,Wo]: where each window's max_pool2d element lies, as its
//       row-major position in the kh x kw window (padding counted), PyTorch's pick. Not differentiable: what
//       passes/pool_grad_by_argmax.h makes of a max pooling's gradient reads.
//   max_pool2d_grad(grad_out, x; pool attrs), avg_pool2d_grad(grad_out; pool attrs, input_shape) and
//   max_pool2d_grad_argmax(grad_out, argmax; pool attrs, input_shape): the gradients (backward-only)
//
// The references follow PyTorch's CPU kernels (floor mode, no dilation):
//   - a window starts at (oh*sh - ph, ow*sw - pw) and spans kernel rows and columns; padded positions are
//     never read (max: they never win; avg: they count in the divisor, count_include_pad=True);
//   - max picks, in row-major window order, the first element that is greater than every earlier one, or
//     any NaN (so NaN propagates); max_pool2d_grad sends the window's gradient to that element alone.
//
// All keep their OpKind and builder method (g.max_pool2d, ...): the passes, fusion and the nn layers name them.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ir/graph/ops/common.h"
#include "ir/graph/shape_checks.h"

namespace spire::graph::ops {

namespace {

using namespace shape_checks;

std::vector<AttrSpec> pool_attrs() { return {{"kernel", K::Ints}, {"stride", K::Ints}, {"padding", K::Ints}}; }

// ---- shape rules

Shape pool_out_shape(const ShapeContext& c, const Shape& x, const std::string& x_desc) {
  const auto& kernel = ints_attr(c, "kernel", 2, 1);
  const auto& stride = ints_attr(c, "stride", 2, 1);
  const auto& padding = ints_attr(c, "padding", 2, 0);
  if (x.size() != 4) c.fail(fmt::format("{} must have rank 4 ([N, C, H, W])", x_desc));
  for (int i = 0; i < 2; ++i)
    if (padding[i] * 2 > kernel[i])
      c.fail(fmt::format("padding {} must be at most half the kernel {} (as PyTorch requires)",
                         shape_to_string(padding), shape_to_string(kernel)));
  Shape out = {x[0], x[1], 0, 0};
  for (int i = 0; i < 2; ++i)
    out[2 + i] = window_out(c, i == 0 ? "height" : "width", x[2 + i], kernel[i], stride[i], padding[i]);
  return out;
}


TensorType pool2d_shape(const ShapeContext& c) {
  require_float(c, 0);
  return {c.inputs[0].dtype, pool_out_shape(c, c.inputs[0].shape, c.describe_input(0))};
}

TensorType max_pool2d_argmax_shape(const ShapeContext& c) {
  require_float(c, 0);
  return {DType::I32, pool_out_shape(c, c.inputs[0].shape, c.describe_input(0))};
}

TensorType max_pool2d_grad_shape(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 1);
  Shape out = pool_out_shape(c, c.inputs[1].shape, c.describe_input(1));
  require_shape(c, 0, out, "the gradient has max_pool2d's result shape");
  return c.inputs[1];
}

TensorType avg_pool2d_grad_shape(const ShapeContext& c) {
  require_float(c, 0);
  Shape in = shape_attr(c, "input_shape");
  Shape out = pool_out_shape(c, in, "input_shape " + shape_to_string(in));
  require_shape(c, 0, out, "the gradient has avg_pool2d's result shape");
  return {c.inputs[0].dtype, in};
}

TensorType max_pool2d_grad_argmax_shape(const ShapeContext& c) {
  require_float(c, 0);
  if (c.inputs[1].dtype != DType::I32)
    c.fail(fmt::format("{} (the windows' maxima, max_pool2d_argmax's result) must be i32", c.describe_input(1)));
  Shape in = shape_attr(c, "input_shape");
  Shape out = pool_out_shape(c, in, "input_shape " + shape_to_string(in));
  require_shape(c, 0, out, "the gradient has max_pool2d's result shape");
  require_shape(c, 1, out, "one position per window");
  return {c.inputs[0].dtype, in};
}

// ---- float64 references

struct PoolGeometry {
  int64_t planes;  // N * C
  int64_t in_h, in_w, out_h, out_w;
  int64_t kh, kw, sh, sw, ph, pw;
};

PoolGeometry geometry(const Node& n, const Shape& x, const Shape& y) {
  if (x.size() != 4 || y.size() != 4 || x[0] != y[0] || x[1] != y[1])
    eval::fail(n, fmt::format("input {} and output {} are not matching NCHW shapes", shape_to_string(x),
                        shape_to_string(y)));
  const Pool2dOptions o = pool2d_options(n);
  if (o.kernel.size() != 2 || o.stride.size() != 2 || o.padding.size() != 2)
    eval::fail(n, "kernel, stride and padding need 2 values each");
  PoolGeometry g{};
  g.planes = x[0] * x[1];
  g.in_h = x[2], g.in_w = x[3], g.out_h = y[2], g.out_w = y[3];
  g.kh = o.kernel[0], g.kw = o.kernel[1], g.sh = o.stride[0], g.sw = o.stride[1];
  g.ph = o.padding[0], g.pw = o.padding[1];
  if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.ph < 0 || g.pw < 0)
    eval::fail(n, "kernel and stride must be >= 1 and padding >= 0");
  // PyTorch's own precondition; it also guarantees that no window lies wholly in the padding.
  if (2 * g.ph > g.kh || 2 * g.pw > g.kw)
    eval::fail(n, fmt::format("padding [{},{}] exceeds half the kernel [{},{}]", g.ph, g.pw, g.kh, g.kw));
  if (g.out_h != (g.in_h + 2 * g.ph - g.kh) / g.sh + 1 || g.out_w != (g.in_w + 2 * g.pw - g.kw) / g.sw + 1)
    eval::fail(n, fmt::format("output {} does not match input {}", shape_to_string(y), shape_to_string(x)));
  return g;
}

// One window: its rows [h0, h1) and columns [w0, w1) clipped to the input, and PyTorch's avg divisor, the
// window's extent clipped to the padded input (the padding counts, whatever lies beyond does not).
struct Window {
  int64_t h0, h1, w0, w1;
  int64_t divisor;
};

Window window(const PoolGeometry& g, int64_t oh, int64_t ow) {
  int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  int64_t h1 = std::min(h0 + g.kh, g.in_h + g.ph), w1 = std::min(w0 + g.kw, g.in_w + g.pw);
  const int64_t divisor = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, g.in_h), w1 = std::min(w1, g.in_w);
  return {h0, h1, w0, w1, divisor};
}

// The plane offset of the window's maximum (see the file comment), and the maximum.
std::pair<int64_t, double> window_max(const PoolGeometry& g, const double* plane, const Window& win) {
  int64_t best = win.h0 * g.in_w + win.w0;
  double best_value = -std::numeric_limits<double>::infinity();
  for (int64_t h = win.h0; h < win.h1; ++h)
    for (int64_t w = win.w0; w < win.w1; ++w) {
      const double v = plane[h * g.in_w + w];
      if (v > best_value || std::isnan(v)) best_value = v, best = h * g.in_w + w;
    }
  return {best, best_value};
}


// Calls visit(w) for every window of every plane, in order: the references' common loop.
struct WindowAt {
  int64_t plane_in;   // the first element of its plane among the input's (or the input gradient's) elements
  int64_t out;        // its own element among the output's (or the output gradient's)
  int64_t oh, ow;     // its row and column among the outputs
};
template <class Visit>
void for_each_window(const PoolGeometry& g, Visit&& visit) {
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        visit(WindowAt{p * g.in_h * g.in_w, (p * g.out_h + oh) * g.out_w + ow, oh, ow});
}

// y[plane][oh][ow] = at(plane, oh, ow) for every window of every plane: the forward poolings.
Tensor per_window(const Node& n, const Tensor& x,
                  const std::function<double(const PoolGeometry&, const double* plane, int64_t oh, int64_t ow)>& at) {
  Tensor y = eval::result_of(n);
  const PoolGeometry g = geometry(n, x.shape, y.shape);
  for_each_window(g, [&](const WindowAt& w) { y.data[size_t(w.out)] = at(g, x.data.data() + w.plane_in, w.oh, w.ow); });
  return y;
}

Tensor max_pool2d_reference(const Node& n, eval::Inputs in) {
  return per_window(n, *in[0], [](const PoolGeometry& g, const double* plane, int64_t oh, int64_t ow) {
    return window_max(g, plane, window(g, oh, ow)).second;
  });
}

Tensor max_pool2d_grad_reference(const Node& n, eval::Inputs in) {
  const Tensor& gy = *in[0];
  const Tensor& x = *in[1];
  Tensor gx = eval::result_of(n);
  if (gx.shape != x.shape) eval::fail(n, "result and input shapes differ");
  const PoolGeometry g = geometry(n, x.shape, gy.shape);
  for_each_window(g, [&](const WindowAt& w) {
    const double* plane = x.data.data() + w.plane_in;
    gx.data[size_t(w.plane_in + window_max(g, plane, window(g, w.oh, w.ow)).first)] += gy.data[size_t(w.out)];
  });
  return gx;
}

// The position of window (oh, ow)'s maximum in the kh x kw window (row-major, padding counted): max_pool2d_argmax.
Tensor max_pool2d_argmax_reference(const Node& n, eval::Inputs in) {
  return per_window(n, *in[0], [](const PoolGeometry& g, const double* plane, int64_t oh, int64_t ow) {
    const int64_t at = window_max(g, plane, window(g, oh, ow)).first;
    return double((at / g.in_w - (oh * g.sh - g.ph)) * g.kw + at % g.in_w - (ow * g.sw - g.pw));
  });
}

// max_pool2d_grad from the windows' positions: each window's gradient goes to the element its position names.
Tensor max_pool2d_grad_argmax_reference(const Node& n, eval::Inputs in) {
  const Tensor& gy = *in[0];
  const Tensor& argmax = *in[1];
  Tensor gx = eval::result_of(n);
  const PoolGeometry g = geometry(n, gx.shape, gy.shape);
  if (argmax.shape != gy.shape) eval::fail(n, "the positions and the gradient differ in shape");
  for_each_window(g, [&](const WindowAt& win) {
    const int64_t k = int64_t(argmax.data[size_t(win.out)]);
    const int64_t h = win.oh * g.sh - g.ph + k / g.kw, w = win.ow * g.sw - g.pw + k % g.kw;
    if (k < 0 || k >= g.kh * g.kw || h < 0 || h >= g.in_h || w < 0 || w >= g.in_w)
      eval::fail(n, fmt::format("window ({}, {}) of plane {}: position {} is not an element of the window", win.oh,
                                win.ow, win.plane_in / (g.in_h * g.in_w), k));
    gx.data[size_t(win.plane_in + h * g.in_w + w)] += gy.data[size_t(win.out)];
  });
  return gx;
}

Tensor avg_pool2d_reference(const Node& n, eval::Inputs in) {
  return per_window(n, *in[0], [](const PoolGeometry& g, const double* plane, int64_t oh, int64_t ow) {
    const Window win = window(g, oh, ow);
    double sum = 0;
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) sum += plane[h * g.in_w + w];
    return sum / double(win.divisor);
  });
}

Tensor avg_pool2d_grad_reference(const Node& n, eval::Inputs in) {
  const Tensor& gy = *in[0];
  Tensor gx = eval::result_of(n);
  const PoolGeometry g = geometry(n, gx.shape, gy.shape);
  for_each_window(g, [&](const WindowAt& at) {
    const Window win = window(g, at.oh, at.ow);
    const double share = gy.data[size_t(at.out)] / double(win.divisor);
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) gx.data[size_t(at.plane_in + h * g.in_w + w)] += share;
  });
  return gx;
}

// ---- VJPs

std::vector<Value> max_pool2d_vjp(VjpContext& c) {
  const Node n = c.g.node(c.out);
  return {c.g.max_pool2d_grad(c.grad_out, n.inputs[0], pool2d_options(n))};
}

std::vector<Value> avg_pool2d_vjp(VjpContext& c) {
  const Node n = c.g.node(c.out);
  const Shape x = c.g.type(n.inputs[0]).shape;
  return {c.g.avg_pool2d_grad(c.grad_out, pool2d_options(n), x)};
}

// ---- costs (op_table.h's OpCost)

int64_t pool_window(const Node& n) {
  const Pool2dOptions o = pool2d_options(n);
  return o.kernel[0] * o.kernel[1];
}
// One compare (max) or add (avg, plus the 1/count multiply) per window element per result element.
OpCost max_pool_cost(const Node& n, std::span<const TensorType> in) {
  return {n.type.numel() * pool_window(n), io_bytes(n, in)};
}
OpCost avg_pool_cost(const Node& n, std::span<const TensorType> in) {
  return {n.type.numel() * (pool_window(n) + 1), io_bytes(n, in)};
}
// Each window finds its maximum again (one compare per element) and adds its upstream gradient there; avg
// spreads gradient/count over the window.
OpCost pool_grad_cost(const Node& n, std::span<const TensorType> in) {
  return {in[0].numel() * (pool_window(n) + 1), io_bytes(n, in)};
}
// Each window's gradient goes where its position says: one add per window, no compares.
OpCost pool_grad_argmax_cost(const Node& n, std::span<const TensorType> in) { return {in[0].numel(), io_bytes(n, in)}; }

}  // namespace

std::vector<OpInfo> pool2d_ops() {
  const OpCategory H = OpCategory::Heavy;
  const Tolerance routes{1e-6, 1e-14, "routes each upstream gradient to one element; adds where windows overlap"};
  return {
      {.kind = OpKind::MaxPool2d, .name = "max_pool2d", .arity = 1, .attrs = pool_attrs(), .category = H,
       .shape = pool2d_shape, .vjp = max_pool2d_vjp, .reference = max_pool2d_reference, .forward = kCopy,
       .backward = routes, .cost = max_pool_cost},
      {.kind = OpKind::MaxPool2dArgmax, .name = "max_pool2d_argmax", .arity = 1, .attrs = pool_attrs(), .category = H,
       .shape = max_pool2d_argmax_shape, .reference = max_pool2d_argmax_reference,
       .forward = {0, 0, "a position: the compares are exact"}, .backward = kCopy, .cost = max_pool_cost},
      {.kind = OpKind::AvgPool2d, .name = "avg_pool2d", .arity = 1, .attrs = pool_attrs(), .category = H,
       .shape = pool2d_shape, .vjp = avg_pool2d_vjp, .reference = avg_pool2d_reference,
       .forward = {2e-6, 1e-14, "a sum of a few window elements times 1/count"}, .backward = kReduction,
       .cost = avg_pool_cost},
      // Backward-only: not differentiable themselves (no double backward).
      // Each window's gradient goes to its FIRST maximal element in row-major window order (as PyTorch).
      {.kind = OpKind::MaxPool2dGrad, .name = "max_pool2d_grad", .arity = 2, .attrs = pool_attrs(), .category = H,
       .shape = max_pool2d_grad_shape, .reference = max_pool2d_grad_reference, .forward = routes,
       .backward = kCopy, .cost = pool_grad_cost},
      {.kind = OpKind::AvgPool2dGrad, .name = "avg_pool2d_grad", .arity = 1, .attrs = plus(pool_attrs(), {"input_shape", K::Ints}),
       .category = H, .shape = avg_pool2d_grad_shape, .reference = avg_pool2d_grad_reference,
       .forward = {2e-6, 1e-14, "a sum of a few upstream gradients times 1/count"}, .backward = kCopy,
       .cost = pool_grad_cost},
      {.kind = OpKind::MaxPool2dGradArgmax, .name = "max_pool2d_grad_argmax", .arity = 2,
       .attrs = plus(pool_attrs(), {"input_shape", K::Ints}), .category = H, .shape = max_pool2d_grad_argmax_shape,
       .reference = max_pool2d_grad_argmax_reference, .forward = routes, .backward = kCopy,
       .cost = pool_grad_argmax_cost},
  };
}

}  // namespace spire::graph::ops
