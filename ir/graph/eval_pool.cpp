// max_pool2d, avg_pool2d and their gradients (floor mode, no dilation), as PyTorch's CPU kernels define them:
//   - a window starts at (oh*sh - ph, ow*sw - pw) and spans kernel rows and columns; padded positions are
//     never read (max: they never win; avg: they count in the divisor, count_include_pad=True);
//   - max picks, in row-major window order, the first element that is greater than every earlier one, or
//     any NaN (so NaN propagates); max_pool2d_grad sends the window's gradient to that element alone.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "ir/graph/eval_ops.h"

namespace spire::graph::eval {

namespace {

struct PoolGeometry {
  int64_t planes;  // N * C
  int64_t in_h, in_w, out_h, out_w;
  int64_t kh, kw, sh, sw, ph, pw;
};

PoolGeometry geometry(const Node& n, const Shape& x, const Shape& y) {
  if (x.size() != 4 || y.size() != 4 || x[0] != y[0] || x[1] != y[1])
    fail(n, fmt::format("input {} and output {} are not matching NCHW shapes", shape_to_string(x),
                        shape_to_string(y)));
  const Pool2dOptions o = pool2d_options(n);
  if (o.kernel.size() != 2 || o.stride.size() != 2 || o.padding.size() != 2)
    fail(n, "kernel, stride and padding need 2 values each");
  PoolGeometry g{};
  g.planes = x[0] * x[1];
  g.in_h = x[2], g.in_w = x[3], g.out_h = y[2], g.out_w = y[3];
  g.kh = o.kernel[0], g.kw = o.kernel[1], g.sh = o.stride[0], g.sw = o.stride[1];
  g.ph = o.padding[0], g.pw = o.padding[1];
  if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.ph < 0 || g.pw < 0)
    fail(n, "kernel and stride must be >= 1 and padding >= 0");
  // PyTorch's own precondition; it also guarantees that no window lies wholly in the padding.
  if (2 * g.ph > g.kh || 2 * g.pw > g.kw)
    fail(n, fmt::format("padding [{},{}] exceeds half the kernel [{},{}]", g.ph, g.pw, g.kh, g.kw));
  if (g.out_h != (g.in_h + 2 * g.ph - g.kh) / g.sh + 1 || g.out_w != (g.in_w + 2 * g.pw - g.kw) / g.sw + 1)
    fail(n, fmt::format("output {} does not match input {}", shape_to_string(y), shape_to_string(x)));
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


// y[plane][oh][ow] = at(plane, oh, ow) for every window of every plane: the poolings' common loop.
Tensor per_window(const Node& n, const Tensor& x,
                  const std::function<double(const PoolGeometry&, const double* plane, int64_t oh, int64_t ow)>& at) {
  Tensor y = result_of(n);
  const PoolGeometry g = geometry(n, x.shape, y.shape);
  for (int64_t p = 0; p < g.planes; ++p) {
    const double* plane = x.data.data() + p * g.in_h * g.in_w;
    double* out = y.data.data() + p * g.out_h * g.out_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow) out[oh * g.out_w + ow] = at(g, plane, oh, ow);
  }
  return y;
}

}  // namespace

Tensor max_pool2d(const Node& n, Inputs in) {
  return per_window(n, *in[0], [](const PoolGeometry& g, const double* plane, int64_t oh, int64_t ow) {
    return window_max(g, plane, window(g, oh, ow)).second;
  });
}

Tensor max_pool2d_grad(const Node& n, Inputs in) {
  const Tensor& gy = *in[0];
  const Tensor& x = *in[1];
  Tensor gx = result_of(n);
  if (gx.shape != x.shape) fail(n, "result and input shapes differ");
  const PoolGeometry g = geometry(n, x.shape, gy.shape);
  for (int64_t p = 0; p < g.planes; ++p) {
    const double* plane = x.data.data() + p * g.in_h * g.in_w;
    const double* grad = gy.data.data() + p * g.out_h * g.out_w;
    double* out = gx.data.data() + p * g.in_h * g.in_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        out[window_max(g, plane, window(g, oh, ow)).first] += grad[oh * g.out_w + ow];
  }
  return gx;
}

// The position of window (oh, ow)'s maximum in the kh x kw window (row-major, padding counted): max_pool2d_argmax.
Tensor max_pool2d_argmax(const Node& n, Inputs in) {
  return per_window(n, *in[0], [](const PoolGeometry& g, const double* plane, int64_t oh, int64_t ow) {
    const int64_t at = window_max(g, plane, window(g, oh, ow)).first;
    return double((at / g.in_w - (oh * g.sh - g.ph)) * g.kw + at % g.in_w - (ow * g.sw - g.pw));
  });
}

// max_pool2d_grad from the windows' positions: each window's gradient goes to the element its position names.
Tensor max_pool2d_grad_argmax(const Node& n, Inputs in) {
  const Tensor& gy = *in[0];
  const Tensor& argmax = *in[1];
  Tensor gx = result_of(n);
  const PoolGeometry g = geometry(n, gx.shape, gy.shape);
  if (argmax.shape != gy.shape) fail(n, "the positions and the gradient differ in shape");
  for (int64_t p = 0; p < g.planes; ++p) {
    const double* grad = gy.data.data() + p * g.out_h * g.out_w;
    const double* pos = argmax.data.data() + p * g.out_h * g.out_w;
    double* out = gx.data.data() + p * g.in_h * g.in_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t k = int64_t(pos[oh * g.out_w + ow]);
        const int64_t h = oh * g.sh - g.ph + k / g.kw, w = ow * g.sw - g.pw + k % g.kw;
        if (k < 0 || k >= g.kh * g.kw || h < 0 || h >= g.in_h || w < 0 || w >= g.in_w)
          fail(n, fmt::format("window ({}, {}) of plane {}: position {} is not an element of the window", oh, ow, p, k));
        out[h * g.in_w + w] += grad[oh * g.out_w + ow];
      }
  }
  return gx;
}

Tensor avg_pool2d(const Node& n, Inputs in) {
  return per_window(n, *in[0], [](const PoolGeometry& g, const double* plane, int64_t oh, int64_t ow) {
    const Window win = window(g, oh, ow);
    double sum = 0;
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) sum += plane[h * g.in_w + w];
    return sum / double(win.divisor);
  });
}

Tensor avg_pool2d_grad(const Node& n, Inputs in) {
  const Tensor& gy = *in[0];
  Tensor gx = result_of(n);
  const PoolGeometry g = geometry(n, gx.shape, gy.shape);
  for (int64_t p = 0; p < g.planes; ++p) {
    const double* grad = gy.data.data() + p * g.out_h * g.out_w;
    double* out = gx.data.data() + p * g.in_h * g.in_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const Window win = window(g, oh, ow);
        const double share = grad[oh * g.out_w + ow] / double(win.divisor);
        for (int64_t h = win.h0; h < win.h1; ++h)
          for (int64_t w = win.w0; w < win.w1; ++w) out[h * g.in_w + w] += share;
      }
  }
  return gx;
}

}  // namespace spire::graph::eval
