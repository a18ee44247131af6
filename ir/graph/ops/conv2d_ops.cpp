// conv2d and its two gradients, each wholly defined here: shape rules, VJP, float64 references, costs and
// tolerances. Their lowering is lowering/lower_conv2d.cpp, their harness cases op_harness/cases_conv2d.cpp.
//
//   conv2d(x [N,Cin,H,W], w [Cout,Cin/groups,kh,kw]; stride, padding, dilation (2 ints each), groups)
//   conv2d_grad_input(grad_out, w; conv2d's attrs, input_shape)    the gradient of x (backward-only)
//   conv2d_grad_weight(grad_out, x; conv2d's attrs, weight_shape)  the gradient of w (backward-only)
//
// The references are PyTorch's cross-correlation:
// out[n, co, oh, ow] = sum over ci, kh, kw of x[n, g*Cg + ci, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw] *
// w[co, ci, kh, kw], g = co / (Cout / groups), Cg = Cin / groups; taps that land in the padding read 0.
// The three share one walk over (n, co, ci, kh, kw, oh) and differ only in their innermost row loop:
//   conv2d:             out[oh, ow]   += w        * x[ih, iw]
//   conv2d_grad_input:  gx[ih, iw]    += w        * gout[oh, ow]
//   conv2d_grad_weight: gw[kh, kw]    += gout[oh, ow] * x[ih, iw]
// The range of ow whose tap lands inside the input is computed once per kernel column, so the inner loops
// have no bounds checks and run over contiguous rows.
//
// All three keep their OpKind and builder method (g.conv2d, ...): the passes, fusion and the nn layers name them.
#include <algorithm>
#include <array>

#include "base/parallel_for.h"
#include "ir/graph/ops/common.h"
#include "ir/graph/shape_checks.h"

namespace spire::graph::ops {

namespace {

using namespace shape_checks;

std::vector<AttrSpec> conv_attrs() {
  return {{"stride", K::Ints}, {"padding", K::Ints}, {"dilation", K::Ints}, {"groups", K::Int}};
}

// ---- shape rules

// conv2d's result shape from x and w shapes (x is input index ix, w index iw for messages).
Shape conv_out_shape(const ShapeContext& c, const Shape& x, const Shape& w, const std::string& x_desc,
                     const std::string& w_desc) {
  const auto& stride = ints_attr(c, "stride", 2, 1);
  const auto& padding = ints_attr(c, "padding", 2, 0);
  const auto& dilation = ints_attr(c, "dilation", 2, 1);
  int64_t groups = c.attrs.get_int("groups");
  if (groups < 1) c.fail(fmt::format("attribute groups must be >= 1, got {}", groups));
  if (x.size() != 4) c.fail(fmt::format("{} must have rank 4 ([N, Cin, H, W])", x_desc));
  if (w.size() != 4) c.fail(fmt::format("{} must have rank 4 ([Cout, Cin/groups, kh, kw])", w_desc));
  if (x[1] % groups != 0)
    c.fail(fmt::format("{}: {} input channels are not divisible by groups={}", x_desc, x[1], groups));
  if (w[0] % groups != 0)
    c.fail(fmt::format("{}: {} output channels are not divisible by groups={}", w_desc, w[0], groups));
  if (w[1] * groups != x[1])
    c.fail(fmt::format("{} expects {} input channels per group, but {} has {} channels in {} group(s)", w_desc, w[1],
                       x_desc, x[1], groups));
  Shape out = {x[0], w[0], 0, 0};
  for (int i = 0; i < 2; ++i)
    out[2 + i] = window_out(c, i == 0 ? "height" : "width", x[2 + i], dilation[i] * (w[2 + i] - 1) + 1, stride[i],
                            padding[i]);
  return out;
}


TensorType conv2d_shape(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 0);
  return {c.inputs[0].dtype, conv_out_shape(c, c.inputs[0].shape, c.inputs[1].shape, c.describe_input(0),
                                            c.describe_input(1))};
}

TensorType conv2d_grad_input_shape(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 0);
  Shape in = shape_attr(c, "input_shape");
  Shape out = conv_out_shape(c, in, c.inputs[1].shape, "input_shape " + shape_to_string(in), c.describe_input(1));
  require_shape(c, 0, out, "the gradient has conv2d's result shape");
  return {c.inputs[0].dtype, in};
}

TensorType conv2d_grad_weight_shape(const ShapeContext& c) {
  require_same_dtype(c, 0, 1);
  require_float(c, 0);
  Shape w = shape_attr(c, "weight_shape");
  Shape out = conv_out_shape(c, c.inputs[1].shape, w, c.describe_input(1), "weight_shape " + shape_to_string(w));
  require_shape(c, 0, out, "the gradient has conv2d's result shape");
  return {c.inputs[0].dtype, w};
}

// ---- float64 references

struct ConvGeometry {
  int64_t batch, in_channels, in_h, in_w;
  int64_t out_channels, group_in, group_out;  // channels per group
  int64_t kh, kw, out_h, out_w;
  int64_t sh, sw, ph, pw, dh, dw;
};

// Output positions [lo, hi) whose tap `k` lands inside an input of `in_size` (a padding tap reads zero).
struct TapRange {
  int64_t lo = 0, hi = 0;
};

int64_t ceil_div_nonneg(int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; }

std::vector<TapRange> tap_ranges(int64_t in_size, int64_t out_size, int64_t taps, int64_t stride, int64_t pad,
                                 int64_t dilation) {
  std::vector<TapRange> ranges(static_cast<size_t>(taps));
  for (int64_t k = 0; k < taps; ++k) {
    const int64_t shift = k * dilation - pad;  // input index = o * stride + shift
    TapRange& r = ranges[size_t(k)];
    r.lo = std::min(out_size, ceil_div_nonneg(-shift, stride));                 // o * stride + shift >= 0
    r.hi = std::min(out_size, ceil_div_nonneg(in_size - shift, stride));        // o * stride + shift < in_size
    r.hi = std::max(r.hi, r.lo);
  }
  return ranges;
}

int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

ConvGeometry geometry(const Node& n, const Shape& x, const Shape& w, const Shape& y) {
  if (x.size() != 4 || w.size() != 4 || y.size() != 4)
    eval::fail(n, fmt::format("needs 4-d input, weight and output, got {}, {}, {}", shape_to_string(x),
                        shape_to_string(w), shape_to_string(y)));
  const Conv2dOptions o = conv2d_options(n);
  if (o.stride.size() != 2 || o.padding.size() != 2 || o.dilation.size() != 2)
    eval::fail(n, "stride, padding and dilation need 2 values each");
  ConvGeometry g{};
  g.batch = x[0], g.in_channels = x[1], g.in_h = x[2], g.in_w = x[3];
  g.out_channels = w[0], g.kh = w[2], g.kw = w[3];
  g.out_h = y[2], g.out_w = y[3];
  g.sh = o.stride[0], g.sw = o.stride[1], g.ph = o.padding[0], g.pw = o.padding[1];
  g.dh = o.dilation[0], g.dw = o.dilation[1];
  const int64_t groups = o.groups;
  if (groups < 1 || g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0)
    eval::fail(n, "groups, stride and dilation must be >= 1 and padding >= 0");
  if (g.in_channels % groups != 0 || g.out_channels % groups != 0 || w[1] * groups != g.in_channels)
    eval::fail(n, fmt::format("input {} and weight {} do not fit groups={}", shape_to_string(x), shape_to_string(w),
                        groups));
  g.group_in = g.in_channels / groups;
  g.group_out = g.out_channels / groups;
  if (y[0] != g.batch || y[1] != g.out_channels || g.out_h != conv_out_size(g.in_h, g.kh, g.sh, g.ph, g.dh) ||
      g.out_w != conv_out_size(g.in_w, g.kw, g.sw, g.pw, g.dw))
    eval::fail(n, fmt::format("output {} does not match input {} and weight {}", shape_to_string(y), shape_to_string(x),
                        shape_to_string(w)));
  return g;
}

// Flat offsets of rows in NCHW tensors.
int64_t x_row(const ConvGeometry& g, int64_t n, int64_t c, int64_t ih) { return ((n * g.in_channels + c) * g.in_h + ih) * g.in_w; }
int64_t y_row(const ConvGeometry& g, int64_t n, int64_t co, int64_t oh) {
  return ((n * g.out_channels + co) * g.out_h + oh) * g.out_w;
}
int64_t w_at(const ConvGeometry& g, int64_t co, int64_t ci, int64_t kh, int64_t kw) {
  return ((co * g.group_in + ci) * g.kh + kh) * g.kw + kw;
}

// One (image, output channel, input channel of its group, tap, output row) whose tap row lands inside the input:
// the flat offsets of its input row, its output row and its weight; the tap reads input column ow * sw + shift for
// the output columns ow in [lo, hi).
struct TapRow {
  int64_t x_row, y_row, w;
  int64_t lo, hi, shift;
};

// The images and output channels a walk covers: a part of the whole for one thread.
struct WalkRange {
  int64_t n_lo, n_hi, co_lo, co_hi;
};

// Calls row(tap_row) for every such row of `r`, in (image, output channel, input channel, tap row, tap column, output
// row) order: the three references' common loop.
template <class Row>
void walk(const ConvGeometry& g, const WalkRange& r, Row&& row) {
  const std::vector<TapRange> rows = tap_ranges(g.in_h, g.out_h, g.kh, g.sh, g.ph, g.dh);
  const std::vector<TapRange> cols = tap_ranges(g.in_w, g.out_w, g.kw, g.sw, g.pw, g.dw);
  for (int64_t n = r.n_lo; n < r.n_hi; ++n)
    for (int64_t co = r.co_lo; co < r.co_hi; ++co) {
      const int64_t first_c = (co / g.group_out) * g.group_in;
      for (int64_t ci = 0; ci < g.group_in; ++ci)
        for (int64_t kh = 0; kh < g.kh; ++kh)
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            const TapRange& cr = cols[size_t(kw)];
            if (cr.lo >= cr.hi) continue;
            const TapRange& rr = rows[size_t(kh)];
            for (int64_t oh = rr.lo; oh < rr.hi; ++oh)
              row(TapRow{x_row(g, n, first_c + ci, oh * g.sh - g.ph + kh * g.dh), y_row(g, n, co, oh),
                         w_at(g, co, ci, kh, kw), cr.lo, cr.hi, kw * g.dw - g.pw});
          }
    }
}

// Multiply-adds per image and output channel, for parallel_for's split.
int64_t work_per_image_channel(const ConvGeometry& g) { return g.group_in * g.kh * g.kw * g.out_h * g.out_w; }

// The walk split over threads by output channel (each thread writes its channels' results or weight gradients alone,
// every element summed in the serial order), or by image (each thread writes its images' input gradients alone).
template <class Row>
void walk_by_output_channel(const ConvGeometry& g, Row&& row) {
  parallel_for(g.out_channels, g.batch * work_per_image_channel(g), [&](int64_t lo, int64_t hi) {
    walk(g, {0, g.batch, lo, hi}, row);
  });
}
template <class Row>
void walk_by_image(const ConvGeometry& g, Row&& row) {
  parallel_for(g.batch, g.out_channels * work_per_image_channel(g), [&](int64_t lo, int64_t hi) {
    walk(g, {lo, hi, 0, g.out_channels}, row);
  });
}

// Which of a convolution's three tensors a reference computes: the output (the forward), or from the output's
// gradient the input's or the weight's gradient.
enum class ConvComputes { output, input, weight };

// Calls body(g, x, w, y, result) with the convolution's three tensors as flat arrays in (input, weight, output)
// order, the output's gradient standing for y in the gradients: two are the node's inputs and the third its
// zeroed result, which `result` points at for writing.
template <class Body>
Tensor conv_reference(const Node& n, eval::Inputs in, ConvComputes computes, Body&& body) {
  Tensor out = eval::result_of(n);
  std::array<const Tensor*, 3> xwy = {in[0], in[1], &out};             // x, w -> y
  if (computes == ConvComputes::input) xwy = {&out, in[1], in[0]};   // gy, w -> gx
  if (computes == ConvComputes::weight) xwy = {in[1], &out, in[0]};  // gy, x -> gw
  const ConvGeometry g = geometry(n, xwy[0]->shape, xwy[1]->shape, xwy[2]->shape);
  body(g, xwy[0]->data.data(), xwy[1]->data.data(), xwy[2]->data.data(), out.data.data());
  return out;
}

Tensor conv2d_reference(const Node& n, eval::Inputs in) {
  auto body = [](const ConvGeometry& g, const double* x, const double* w, const double*, double* y) {
    walk_by_output_channel(g, [&](const TapRow& t) {
      const double* xr = x + t.x_row;
      for (int64_t ow = t.lo; ow < t.hi; ++ow) y[t.y_row + ow] += w[t.w] * xr[ow * g.sw + t.shift];
    });
  };
  return conv_reference(n, in, ConvComputes::output, body);
}

Tensor conv2d_grad_input_reference(const Node& n, eval::Inputs in) {
  auto body = [](const ConvGeometry& g, const double*, const double* w, const double* gy, double* gx) {
    walk_by_image(g, [&](const TapRow& t) {
      double* xr = gx + t.x_row;
      for (int64_t ow = t.lo; ow < t.hi; ++ow) xr[ow * g.sw + t.shift] += w[t.w] * gy[t.y_row + ow];
    });
  };
  return conv_reference(n, in, ConvComputes::input, body);
}

Tensor conv2d_grad_weight_reference(const Node& n, eval::Inputs in) {
  auto body = [](const ConvGeometry& g, const double* x, const double*, const double* gy, double* gw) {
    walk_by_output_channel(g, [&](const TapRow& t) {
      double acc = 0;
      for (int64_t ow = t.lo; ow < t.hi; ++ow) acc += gy[t.y_row + ow] * x[t.x_row + ow * g.sw + t.shift];
      gw[t.w] += acc;
    });
  };
  return conv_reference(n, in, ConvComputes::weight, body);
}

// ---- VJP

std::vector<Value> conv2d_vjp(VjpContext& c) {
  const Node n = c.g.node(c.out);
  const Shape x = c.g.type(n.inputs[0]).shape, w = c.g.type(n.inputs[1]).shape;
  const Conv2dOptions opt = conv2d_options(n);
  Value g0, g1;
  if (c.wants(0)) g0 = c.g.conv2d_grad_input(c.grad_out, n.inputs[1], opt, x);
  if (c.wants(1)) g1 = c.g.conv2d_grad_weight(c.grad_out, n.inputs[0], opt, w);
  return {g0, g1};
}

// ---- costs (op_table.h's OpCost)

// Each result element is a dot product over one group's input channels and the kernel window: the weight's
// elements per output channel, Cin/groups * kh * kw. The bias, when there is one, is a separate add.
OpCost conv2d_cost(const Node& n, std::span<const TensorType> in) {
  const int64_t per_output = in[1].numel() / std::max<int64_t>(in[1].shape[0], 1);
  return {2 * n.type.numel() * per_output, io_bytes(n, in)};
}
// The gradients do the forward's multiply-adds again: grad_input one per (upstream element, weight element of its
// output channel), grad_weight one per (upstream element, weight element of its channel).
OpCost conv_grad_input_cost(const Node& n, std::span<const TensorType> in) {
  return {2 * in[0].numel() * (in[1].numel() / std::max<int64_t>(in[1].shape[0], 1)), io_bytes(n, in)};
}
OpCost conv_grad_weight_cost(const Node& n, std::span<const TensorType> in) {
  return {2 * in[0].numel() * (n.type.numel() / std::max<int64_t>(n.type.shape[0], 1)), io_bytes(n, in)};
}

}  // namespace

std::vector<OpInfo> conv2d_ops() {
  const OpCategory H = OpCategory::Heavy;
  return {
      {.kind = OpKind::Conv2d, .name = "conv2d", .arity = 2, .attrs = conv_attrs(), .category = H,
       .shape = conv2d_shape, .vjp = conv2d_vjp, .reference = conv2d_reference, .forward = kHeavy,
       .backward = kHeavy, .cost = conv2d_cost},
      // Backward-only: not differentiable themselves (no double backward).
      {.kind = OpKind::Conv2dGradInput, .name = "conv2d_grad_input", .arity = 2,
       .attrs = plus(conv_attrs(), {"input_shape", K::Ints}), .category = H, .shape = conv2d_grad_input_shape,
       .reference = conv2d_grad_input_reference, .forward = kHeavy, .backward = kHeavy, .cost = conv_grad_input_cost},
      {.kind = OpKind::Conv2dGradWeight, .name = "conv2d_grad_weight", .arity = 2,
       .attrs = plus(conv_attrs(), {"weight_shape", K::Ints}), .category = H, .shape = conv2d_grad_weight_shape,
       .reference = conv2d_grad_weight_reference, .forward = kHeavy, .backward = kHeavy,
       .cost = conv_grad_weight_cost},
  };
}

}  // namespace spire::graph::ops
