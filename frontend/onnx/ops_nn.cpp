// Neural-network ops: Conv ConvTranspose MaxPool MaxUnpool AveragePool GlobalAveragePool GlobalMaxPool BatchNormalization
// LayerNormalization Gemm MatMul. 1-D convolutions and pools run as 2-D ones with a height of 1; 3-D and dilated pools,
// and MaxPool's Indices, gather their windows' taps (pool_by_taps).
#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

// Spatial rank of an [N, C, spatial...] input: 1 to `most` (2 for convolutions, 3 for pools), refused otherwise.
int64_t spatial_rank(NodeContext& c, int i, int64_t most = 2) {
  const int64_t r = c.type(i).rank() - 2;
  if (r < 1 || r > most)
    c.refuse(fmt::format("input {} has rank {}; spire supports 1-D to {}-D (rank 3 to {}) here", i, r + 2, most, most + 2));
  if (!graph::is_float(c.type(i).dtype)) c.refuse("spire runs this op on float tensors only");
  return r;
}

// [N, C, L] -> [N, C, 1, L]: a 1-D op is the 2-D op with a height of 1.
Value lift_1d(NodeContext& c, Value x) {
  Shape s = c.g().type(x).shape;
  s.insert(s.begin() + 2, 1);
  return c.g().reshape(x, s);
}
std::vector<int64_t> lift_1d(std::vector<int64_t> v, int64_t fill) {
  v.insert(v.begin(), fill);
  return v;
}

// Padding before and after each spatial dim, from pads / auto_pad.
struct WindowPads {
  std::vector<int64_t> begin, end;
  bool symmetric() const { return begin == end; }
};
WindowPads window_pads(NodeContext& c, int64_t rank, const Shape& in, const std::vector<int64_t>& kernel,
                       const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations) {
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> begin(size_t(rank), 0), end(size_t(rank), 0);
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t x = in[size_t(d)], s = strides[size_t(d)];
      const int64_t out = (x + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + (kernel[size_t(d)] - 1) * dilations[size_t(d)] + 1 - x);
      begin[size_t(d)] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[size_t(d)] = total - begin[size_t(d)];
    }
  } else if (auto_pad == "NOTSET") {
    const auto pads = c.attr_ints("pads", std::vector<int64_t>(size_t(2 * rank), 0));
    if (int64_t(pads.size()) != 2 * rank) c.refuse(fmt::format("pads has {} entries, not {}", pads.size(), 2 * rank));
    for (int64_t d = 0; d < rank; ++d) {
      begin[size_t(d)] = pads[size_t(d)];
      end[size_t(d)] = pads[size_t(d + rank)];
    }
  } else if (auto_pad != "VALID") {
    c.refuse(fmt::format("auto_pad '{}' is not an ONNX value", auto_pad));
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (begin[size_t(d)] < 0 || end[size_t(d)] < 0) c.refuse("negative pads");
    if (begin[size_t(d)] > (int64_t(1) << 30) || end[size_t(d)] > (int64_t(1) << 30)) c.refuse("pads out of range");
  }
  return {begin, end};
}

// [N, C, spatial...] embedded at `begin` in a tensor of `shape` filled with `fill`: explicit padding, for windows
// the ops' symmetric padding cannot express (asymmetric pads, pads wider than half a pool's kernel, ceil mode).
Value pad_spatial(NodeContext& c, Value x, const std::vector<int64_t>& begin, const Shape& shape, double fill) {
  const size_t rank = shape.size();
  std::vector<int64_t> starts(rank, 0), steps(rank, 1);
  for (size_t d = 0; d < begin.size(); ++d) starts[d + 2] = begin[d];
  return c.g().op("pad", {x}, {{"starts", starts}, {"steps", steps}, {"shape", shape}, {"value", fill}});
}

std::vector<int64_t> ints_of_rank(NodeContext& c, const std::string& name, int64_t rank, int64_t fill) {
  auto v = c.attr_ints(name, std::vector<int64_t>(size_t(rank), fill));
  if (int64_t(v.size()) != rank) c.refuse(fmt::format("{} has {} entries, not {}", name, v.size(), rank));
  for (int64_t x : v)
    if (x <= 0 || x > (int64_t(1) << 30)) c.refuse(fmt::format("{} must be positive and at most 2^30", name));
  return v;
}

void conv(NodeContext& c) {
  auto& g = c.g();
  const int64_t rank = spatial_rank(c, 0);
  const Shape xs = c.type(0).shape, ws = c.type(1).shape;
  if (int64_t(ws.size()) != rank + 2) c.refuse("the weight's rank does not match the input's");
  const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (c.attr("kernel_shape") && c.attr_ints("kernel_shape") != kernel)
    c.refuse("kernel_shape differs from the weight's shape");
  const auto strides = ints_of_rank(c, "strides", rank, 1);
  const auto dilations = ints_of_rank(c, "dilations", rank, 1);
  const Shape spatial(xs.begin() + 2, xs.end());
  const WindowPads wp = window_pads(c, rank, spatial, kernel, strides, dilations);
  std::vector<int64_t> pads = wp.begin;
  graph::Conv2dOptions o;
  o.groups = c.attr_int("group", 1);
  Value x = c.value(0), w = c.value(1);
  if (!wp.symmetric()) {  // zeros placed explicitly, then an unpadded convolution
    Shape padded = xs;
    for (int64_t d = 0; d < rank; ++d) padded[size_t(d + 2)] += wp.begin[size_t(d)] + wp.end[size_t(d)];
    x = pad_spatial(c, x, wp.begin, padded, 0.0);
    pads.assign(size_t(rank), 0);
  }
  if (rank == 1) {
    x = lift_1d(c, x);
    w = lift_1d(c, w);
    o.stride = lift_1d(strides, 1);
    o.dilation = lift_1d(dilations, 1);
    o.padding = lift_1d(pads, 0);
  } else {
    o.stride = strides;
    o.dilation = dilations;
    o.padding = pads;
  }
  Value y = g.conv2d(x, w, o);
  if (c.has_input(2)) y = g.add(y, g.reshape(c.value(2), {1, ws[0], 1, 1}));
  if (rank == 1) {
    Shape s = g.type(y).shape;
    s.erase(s.begin() + 2);
    y = g.reshape(y, s);
  }
  c.set_output(0, y);
}

// ConvTranspose: the gradient of a convolution with respect to its input, which is what a transposed convolution
// computes (its weight [C_in, C_out / group, k..] is that convolution's weight). The full result, of extent
// stride (in - 1) + dilation (k - 1) + 1 + output_padding, comes unpadded; the pads (given, from auto_pad, or from
// output_shape) are then cropped off with a slice.
// A 3-D transposed convolution, unpadded, of extent `full`: for each depth tap kd, the 2-D transposed convolution of
// every input depth slice (the depth folded into the batch) with the weight's slice kd lands at output depths
// d stride + kd dilation (the pad op's strided embedding); the taps' results are summed. Work of the direct form.
Value conv_transpose_3d(NodeContext& c, const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                        const Shape& full, int64_t groups) {
  auto& g = c.g();
  const Shape xs = c.type(0).shape, ws = c.type(1).shape;
  const int64_t n = xs[0], ch = xs[1], depth = xs[2], m = full[1];
  const Value x2d = g.reshape(g.permute(c.value(0), {0, 2, 1, 3, 4}), {n * depth, ch, xs[3], xs[4]});
  graph::Conv2dOptions o;
  o.groups = groups;
  o.stride = {strides[1], strides[2]};
  o.dilation = {dilations[1], dilations[2]};
  o.padding = {0, 0};
  Value sum;
  for (int64_t kd = 0; kd < ws[2]; ++kd) {
    const Value wk = g.reshape(g.op("slice", {c.value(1)}, {{"starts", std::vector<int64_t>{0, 0, kd, 0, 0}},
                                                            {"steps", std::vector<int64_t>(5, 1)},
                                                            {"shape", Shape{ws[0], ws[1], 1, ws[3], ws[4]}}}),
                               {ws[0], ws[1], ws[3], ws[4]});
    Value z = g.conv2d_grad_input(x2d, wk, o, {n * depth, m, full[3], full[4]});
    z = g.permute(g.reshape(z, {n, depth, m, full[3], full[4]}), {0, 2, 1, 3, 4});
    z = g.op("pad", {z}, {{"starts", std::vector<int64_t>{0, 0, kd * dilations[0], 0, 0}},
                          {"steps", std::vector<int64_t>{1, 1, strides[0], 1, 1}}, {"shape", full}, {"value", 0.0}});
    sum = sum.valid() ? g.add(sum, z) : z;
  }
  return sum;
}

void conv_transpose(NodeContext& c) {
  auto& g = c.g();
  const int64_t rank = spatial_rank(c, 0, 3);
  const Shape xs = c.type(0).shape, ws = c.type(1).shape;
  if (int64_t(ws.size()) != rank + 2) c.refuse("the weight's rank does not match the input's");
  const int64_t groups = c.attr_int("group", 1);
  if (groups < 1 || ws[0] != xs[1] || xs[1] % groups != 0)
    c.refuse(fmt::format("a weight of shape {} for {} input channels in {} groups", fmt::join(ws, "x"), xs[1], groups));
  const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (c.attr("kernel_shape") && c.attr_ints("kernel_shape") != kernel)
    c.refuse("kernel_shape differs from the weight's shape");
  const auto strides = ints_of_rank(c, "strides", rank, 1);
  const auto dilations = ints_of_rank(c, "dilations", rank, 1);
  // Non-negative per-dim attributes (ints_of_rank takes positive ones).
  auto counts = [&](const std::string& name, int64_t n) {
    const auto v = c.attr_ints(name, std::vector<int64_t>(size_t(n), 0));
    if (int64_t(v.size()) != n) c.refuse(fmt::format("{} has {} entries, not {}", name, v.size(), n));
    for (int64_t x : v)
      if (x < 0 || x > (int64_t(1) << 30)) c.refuse(fmt::format("{} must be in [0, 2^30]", name));
    return v;
  };
  const auto output_padding = counts("output_padding", rank);
  Shape full = {xs[0], ws[1] * groups};
  for (int64_t d = 0; d < rank; ++d) {
    if (output_padding[size_t(d)] < 0 || output_padding[size_t(d)] >= std::max(strides[size_t(d)], dilations[size_t(d)]))
      c.refuse("output_padding must be below the stride or the dilation");
    full.push_back(strides[size_t(d)] * (xs[size_t(d + 2)] - 1) + dilations[size_t(d)] * (kernel[size_t(d)] - 1) + 1 +
                   output_padding[size_t(d)]);
  }
  // The pads to crop: begin [0, rank), end [rank, 2 rank).
  std::vector<int64_t> pads = counts("pads", 2 * rank);
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> wanted;  // the output's spatial extent, when output_shape or SAME_* fixes it
  if (c.attr("output_shape")) {
    wanted = c.attr_ints("output_shape");
    if (int64_t(wanted.size()) == rank + 2) wanted.erase(wanted.begin(), wanted.begin() + 2);
    if (int64_t(wanted.size()) != rank) c.refuse("output_shape has the wrong length");
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int64_t d = 0; d < rank; ++d) wanted.push_back(xs[size_t(d + 2)] * strides[size_t(d)]);
  } else if (auto_pad == "VALID") {
    pads.assign(size_t(2 * rank), 0);
  } else if (auto_pad != "NOTSET") {
    c.refuse(fmt::format("auto_pad '{}'", auto_pad));
  }
  if (!wanted.empty()) {
    for (int64_t d = 0; d < rank; ++d) {
      // An output_shape past the full result extends it with zeros at the end (ONNX's implicit output padding).
      if (wanted[size_t(d)] > full[size_t(d + 2)]) full[size_t(d + 2)] = wanted[size_t(d)];
      const int64_t total = full[size_t(d + 2)] - wanted[size_t(d)];
      const int64_t half = total / 2;
      pads[size_t(d)] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[size_t(d + rank)] = total - pads[size_t(d)];
    }
  }
  Shape out = full;
  for (int64_t d = 0; d < rank; ++d) {
    out[size_t(d + 2)] -= pads[size_t(d)] + pads[size_t(d + rank)];
    if (pads[size_t(d)] < 0 || pads[size_t(d + rank)] < 0 || out[size_t(d + 2)] < 1)
      c.refuse("the pads crop more than the transposed convolution produces");
  }
  graph::Conv2dOptions o;
  o.groups = groups;
  Value x = c.value(0), w = c.value(1);
  Shape full2d = full;
  if (rank == 1) {
    x = lift_1d(c, x);
    w = lift_1d(c, w);
    full2d.insert(full2d.begin() + 2, 1);
    o.stride = lift_1d(strides, 1);
    o.dilation = lift_1d(dilations, 1);
    o.padding = {0, 0};
  } else {
    o.stride = strides;
    o.dilation = dilations;
    o.padding = {0, 0};
  }
  Value y = rank == 3 ? conv_transpose_3d(c, strides, dilations, full, groups)
                      : g.conv2d_grad_input(x, w, o, full2d);
  if (rank == 1) y = g.reshape(y, full);
  if (out != full) {
    std::vector<int64_t> starts(size_t(rank + 2), 0);
    for (int64_t d = 0; d < rank; ++d) starts[size_t(d + 2)] = pads[size_t(d)];
    y = g.op("slice", {y}, {{"starts", starts}, {"steps", std::vector<int64_t>(size_t(rank + 2), 1)}, {"shape", out}});
  }
  if (c.has_input(2)) {
    Shape along(size_t(rank + 2), 1);
    along[1] = out[1];
    y = g.add(y, g.reshape(c.value(2), along));
  }
  c.set_output(0, y);
}

// A pool the 2-D pool ops cannot express (3-D, dilated, or MaxPool's Indices output, which storage_order shapes). Every window's taps are gathered
// from the explicitly padded input, flattened per [n, c] plane, at positions known at import: [N, C, taps, outputs..],
// one launch of work taps x outputs like a pool kernel's. Then a max over the taps (Indices: the least input position
// where a tap equals that max, the window's first in ONNX's row-major order), or a sum divided by the taps ONNX counts.
void pool_by_taps(NodeContext& c, bool max, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                  const std::vector<int64_t>& dilations, const WindowPads& wp) {
  auto& g = c.g();
  const Shape xs = c.type(0).shape;
  const size_t rank = kernel.size();
  const bool ceil = c.attr_int("ceil_mode", 0) != 0;
  const bool count_pad = c.attr_int("count_include_pad", 0) != 0;
  // storage_order 1: Indices count the spatial axes column-major (the first fastest).
  const bool column_major = c.attr_int("storage_order", 0) != 0;
  const DType dt = c.type(0).dtype;
  Shape padded = xs, out = xs;
  int64_t taps = 1, outs = 1, plane = 1, padded_plane = 1;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t extent = xs[d + 2] + wp.begin[d] + wp.end[d], span = (kernel[d] - 1) * dilations[d] + 1;
    if (extent < span) c.refuse(fmt::format("the window {} does not fit the padded input {}", span, extent));
    int64_t n = (extent - span) / strides[d] + 1;
    if (ceil) {
      n = (extent - span + strides[d] - 1) / strides[d] + 1;
      if ((n - 1) * strides[d] >= xs[d + 2] + wp.begin[d]) --n;  // a window must start inside the input or its pads
    }
    out[d + 2] = n;
    padded[d + 2] = std::max(extent, (n - 1) * strides[d] + span);
    taps *= kernel[d];
    outs *= n;
    plane *= xs[d + 2];
    padded_plane *= padded[d + 2];
  }
  if (taps * outs > (int64_t(1) << 24) || plane > (int64_t(1) << 24))
    c.refuse(fmt::format("{} taps of {} windows over a plane of {} (this form takes at most 2^24)", taps, outs, plane));
  // For each tap and output: the position read in the padded plane, the input position it is (or -1 in the pads), and
  // whether ONNX's average counts it (inside the input, or inside input and pads with count_include_pad; never the
  // ceil mode's extension).
  graph::Tensor read(DType::I64, {taps * outs}), input_at(DType::F32, [&] {
    Shape s = {1, 1, taps};
    s.insert(s.end(), out.begin() + 2, out.end());
    return s;
  }());
  Shape out_plane = {1, 1};
  out_plane.insert(out_plane.end(), out.begin() + 2, out.end());
  graph::Tensor counted(dt, out_plane, 0.0);
  std::vector<int64_t> tap(rank, 0);
  for (int64_t t = 0; t < taps; ++t) {
    std::vector<int64_t> o(rank, 0);
    for (int64_t e = 0; e < outs; ++e) {
      int64_t at_padded = 0, at_input = 0, column_stride = 1;
      bool inside = true, in_pads = true;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t p = o[d] * strides[d] + tap[d] * dilations[d], x = p - wp.begin[d];
        at_padded = at_padded * padded[d + 2] + p;
        if (column_major) at_input += x * column_stride, column_stride *= xs[d + 2];
        else at_input = at_input * xs[d + 2] + x;
        inside = inside && x >= 0 && x < xs[d + 2];
        in_pads = in_pads && p < xs[d + 2] + wp.begin[d] + wp.end[d];
      }
      read.data[size_t(t * outs + e)] = double(at_padded);
      input_at.data[size_t(t * outs + e)] = inside ? double(at_input) : -1.0;
      if (inside || (count_pad && in_pads)) counted.data[size_t(e)] += 1.0;
      for (size_t d = rank; d-- > 0;) {
        if (++o[d] < out[d + 2]) break;
        o[d] = 0;
      }
    }
    for (size_t d = rank; d-- > 0;) {
      if (++tap[d] < kernel[d]) break;
      tap[d] = 0;
    }
  }
  const double lowest = dt == DType::F64 ? -std::numeric_limits<double>::max() : -double(std::numeric_limits<float>::max());
  Value x = pad_spatial(c, c.value(0), wp.begin, padded, max ? lowest : 0.0);
  x = g.reshape(x, {xs[0], xs[1], padded_plane});
  Shape windows = {xs[0], xs[1], taps};
  windows.insert(windows.end(), out.begin() + 2, out.end());
  const std::string name = c.node().output(0);
  const Value v = g.reshape(g.op("gather", {x, c.constant_value(read, name + ".taps")}, {{"axis", int64_t(2)}}), windows);
  if (!max) return c.set_output(0, g.div(g.sum(v, {2}), c.constant_value(counted, name + ".counted")));
  const Value y = g.max(v, {2});
  c.set_output(0, y);
  if (!c.output_used(1)) return;
  // The least input position holding the maximum: positions where a tap equals it, a sentinel past the plane
  // elsewhere (and in the pads), the least by a max of the negated positions.
  const Value sentinel = g.scalar(double(plane), DType::F32);
  const Value at = c.constant_value(input_at, c.node().output(1) + ".positions");
  const Value hit = g.where(g.compare(at, g.scalar(0.0, DType::F32), graph::CompareMode::Ge),
                            g.compare(v, g.reshape(y, [&] { Shape s = windows; s[2] = 1; return s; }()), graph::CompareMode::Eq),
                            g.scalar(0.0, DType::Bool));
  const Value first = g.neg(g.max(g.neg(g.where(hit, at, sentinel)), {2}));
  // Indices are flat over the whole [N, C, spatial...] input: each plane's offset added.
  graph::Tensor base(DType::I64, [&] { Shape s = {xs[0], xs[1]}; s.resize(rank + 2, 1); return s; }());
  for (int64_t p = 0; p < xs[0] * xs[1]; ++p) base.data[size_t(p)] = double(p * plane);
  c.set_output(1, g.add(g.cast(first, DType::I64), c.constant_value(base, c.node().output(1) + ".planes")));
}

void pool(NodeContext& c, bool max) {
  auto& g = c.g();
  const int64_t rank = spatial_rank(c, 0, 3);
  const int64_t storage_order = c.attr_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) c.refuse(fmt::format("storage_order {}", storage_order));
  const Shape xs = c.type(0).shape;
  const auto kernel = c.attr_ints("kernel_shape");
  if (int64_t(kernel.size()) != rank) c.refuse("kernel_shape is missing or has the wrong length");
  for (int64_t k : kernel)
    if (k <= 0 || k > (int64_t(1) << 30)) c.refuse("kernel_shape must be positive and at most 2^30");
  const auto strides = ints_of_rank(c, "strides", rank, 1);
  const auto dilations = ints_of_rank(c, "dilations", rank, 1);
  const Shape spatial(xs.begin() + 2, xs.end());
  const WindowPads wp = window_pads(c, rank, spatial, kernel, strides, dilations);
  const bool dilated = std::any_of(dilations.begin(), dilations.end(), [](int64_t d) { return d != 1; });
  if (rank == 3 || dilated || (max && c.output_used(1))) return pool_by_taps(c, max, kernel, strides, dilations, wp);
  // Each dim's padded extent; ceil mode adds what the last partial window needs (a window must start inside
  // the input or its begin padding, as in ONNX's and PyTorch's output-size rule).
  const bool ceil = c.attr_int("ceil_mode", 0) != 0;
  std::vector<int64_t> extra(size_t(rank), 0);
  bool fits_op = wp.symmetric();  // the pool op pads symmetrically, by at most half the kernel
  for (int64_t d = 0; d < rank; ++d) {
    const size_t k = size_t(d);
    const int64_t padded = spatial[k] + wp.begin[k] + wp.end[k];
    if (padded < kernel[k]) c.refuse(fmt::format("the window {} does not fit the padded input {}", kernel[k], padded));
    if (ceil) {
      int64_t out = (padded - kernel[k] + strides[k] - 1) / strides[k] + 1;
      if ((out - 1) * strides[k] >= spatial[k] + wp.begin[k]) --out;
      extra[k] = std::max<int64_t>(0, (out - 1) * strides[k] + kernel[k] - padded);
    }
    fits_op = fits_op && extra[k] == 0 && 2 * wp.begin[k] <= kernel[k];
  }
  const bool count_pad = max || c.attr_int("count_include_pad", 0) != 0;
  graph::Pool2dOptions o;
  Value x = c.value(0);
  const DType dt = c.type(0).dtype;
  // What the average divides by, where it is not the window's size: the pooled ones of the counted region.
  Value counted;
  if (fits_op) {
    o.padding = wp.begin;
    const bool any_pad = std::any_of(wp.begin.begin(), wp.begin.end(), [](int64_t p) { return p != 0; });
    if (!count_pad && any_pad) {
      Shape ones = xs;
      ones[0] = ones[1] = 1;
      counted = g.constant(1.0, dt, ones);
    }
  } else {
    // Explicit padding: the lowest finite value for max (it never wins over a real element), zeros for the
    // average (divided by what is counted: the real elements, or those and the explicit pads, never ceil's).
    o.padding.assign(size_t(rank), 0);
    Shape padded = xs, pads_only = xs;
    pads_only[0] = pads_only[1] = 1;
    for (int64_t d = 0; d < rank; ++d) {
      const size_t k = size_t(d);
      padded[k + 2] += wp.begin[k] + wp.end[k] + extra[k];
      pads_only[k + 2] += wp.begin[k] + wp.end[k];
    }
    const double lowest = dt == DType::F64 ? -std::numeric_limits<double>::max() : -double(std::numeric_limits<float>::max());
    x = pad_spatial(c, x, wp.begin, padded, max ? lowest : 0.0);
    if (!max) {
      Shape ones = xs, whole = padded;
      ones[0] = ones[1] = whole[0] = whole[1] = 1;
      if (count_pad) {
        std::vector<int64_t> none(size_t(rank), 0);
        counted = pad_spatial(c, g.constant(1.0, dt, pads_only), none, whole, 0.0);
      } else {
        counted = pad_spatial(c, g.constant(1.0, dt, ones), wp.begin, whole, 0.0);
      }
    }
  }
  if (rank == 1) {
    x = lift_1d(c, x);
    if (counted.valid()) counted = lift_1d(c, counted);
    o.kernel = lift_1d(kernel, 1);
    o.stride = lift_1d(strides, 1);
    o.padding = lift_1d(o.padding, 0);
  } else {
    o.kernel = kernel;
    o.stride = strides;
  }
  Value y = max ? g.max_pool2d(x, o) : g.avg_pool2d(x, o);
  if (counted.valid()) y = g.div(y, g.avg_pool2d(counted, o));
  if (rank == 1) {
    Shape s = g.type(y).shape;
    s.erase(s.begin() + 2);
    y = g.reshape(y, s);
  }
  c.set_output(0, y);
}

// MaxUnpool(X, I[, output_shape]): zeros of the output's shape with each X element at the flat position I gives it (as
// MaxPool's Indices count them, over the whole [N, C, spatial..] output). The graph's gather_grad op is that scatter
// (repeated positions sum; ONNX leaves them undefined); its kernels loop over the indices for each output element,
// so the form is refused beyond 2^26 element pairs. A position outside the output lands nowhere on devices and is
// refused by the float64 evaluator.
void max_unpool(NodeContext& c) {
  auto& g = c.g();
  const graph::TensorType x = c.type(0), idx = c.type(1);
  const int64_t rank = spatial_rank(c, 0, 3);
  if (idx.dtype != DType::I64 || idx.shape != x.shape) c.refuse("the indices must be int64 of the input's shape");
  Shape out;
  if (c.has_input(2)) {
    out = c.require_ints(2, "output_shape");
    if (int64_t(out.size()) != rank + 2 || out[0] != x.shape[0] || out[1] != x.shape[1])
      c.refuse(fmt::format("output_shape {} for input {}", graph::shape_to_string(out), graph::shape_to_string(x.shape)));
  } else {
    const auto kernel = c.attr_ints("kernel_shape");
    if (int64_t(kernel.size()) != rank) c.refuse("kernel_shape is missing or has the wrong length");
    const auto strides = ints_of_rank(c, "strides", rank, 1);
    const auto pads = c.attr_ints("pads", std::vector<int64_t>(size_t(2 * rank), 0));
    if (int64_t(pads.size()) != 2 * rank) c.refuse("pads has the wrong length");
    out = {x.shape[0], x.shape[1]};
    for (int64_t d = 0; d < rank; ++d)
      out.push_back((x.shape[size_t(d + 2)] - 1) * strides[size_t(d)] - pads[size_t(d)] - pads[size_t(d + rank)] +
                    kernel[size_t(d)]);
  }
  for (int64_t v : out)
    if (v < 1 || v > (int64_t(1) << 30)) c.refuse(fmt::format("an output of shape {}", graph::shape_to_string(out)));
  const int64_t total = graph::num_elements(out), m = x.numel();
  if (total > (int64_t(1) << 26) / std::max<int64_t>(m, 1))
    c.refuse(fmt::format("{} outputs x {} inputs: the scatter form takes at most 2^26 pairs", total, m));
  const Value flat = g.op("gather_grad", {g.reshape(c.value(0), {m}), g.reshape(c.value(1), {m})},
                          {{"axis", int64_t(0)}, {"shape", Shape{total}}});
  c.set_output(0, g.reshape(flat, out));
}

void global_pool(NodeContext& c, bool max) {
  const int64_t rank = c.type(0).rank();
  if (rank < 3) c.refuse("the input needs rank >= 3 ([N, C, spatial...])");
  if (!graph::is_float(c.type(0).dtype)) c.refuse("spire runs this op on float tensors only");
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d) axes.push_back(d);
  c.set_output(0, max ? c.g().max(c.value(0), axes, true) : c.g().mean(c.value(0), axes, true));
}

// Batch norm: (x - mean) * (scale / sqrt(var + eps)) + bias, per channel (dim 1). Inference mode takes the given
// mean and var; training mode (opset 14+) the batch's own mean and biased variance over every axis but the channel,
// and outputs the running statistics moved towards them: running * momentum + batch * (1 - momentum).
void batch_norm(NodeContext& c) {
  auto& g = c.g();
  const bool training = c.attr_int("training_mode", 0) != 0;
  if (!training)
    for (int i = 1; i < c.num_outputs(); ++i)
      if (c.output_used(i)) c.refuse("the running mean/var outputs need training_mode=1");
  if (training && c.opset() < 14) c.refuse("training before opset 14 (its saved mean/var outputs) is not supported");
  const int64_t rank = c.type(0).rank();
  if (rank < 2) c.refuse("the input needs rank >= 2");
  const int64_t channels = c.type(0).shape[1];
  Shape per_channel(size_t(rank - 1), 1);
  per_channel[0] = channels;
  auto channel = [&](int i) {
    if (c.type(i).shape != Shape{channels}) c.refuse(fmt::format("input {} must have shape [{}]", i, channels));
    return g.reshape(c.value(i), per_channel);
  };
  const DType dt = c.type(0).dtype;
  const Value scale = channel(1), bias = channel(2);
  Value mean = channel(3), var = channel(4);
  if (training) {
    std::vector<int64_t> axes = {0};
    for (int64_t d = 2; d < rank; ++d) axes.push_back(d);
    const Value batch_mean = g.reshape(g.mean(c.value(0), axes, true), per_channel);
    const Value d = g.sub(c.value(0), batch_mean);
    const Value batch_var = g.reshape(g.mean(g.mul(d, d), axes, true), per_channel);
    const double momentum = c.attr_float("momentum", 0.9f);
    auto running = [&](Value old, Value now) {
      return g.reshape(g.add(g.mul(old, momentum), g.mul(now, 1.0 - momentum)), {channels});
    };
    if (c.output_used(1)) c.set_output(1, running(mean, batch_mean));
    if (c.output_used(2)) c.set_output(2, running(var, batch_var));
    mean = batch_mean;
    var = batch_var;
  }
  const Value factor = g.div(scale, g.sqrt(g.add(var, g.scalar(c.attr_float("epsilon", 1e-5f), dt))));
  c.set_output(0, g.add(g.mul(g.sub(c.value(0), mean), factor), bias));
}

void layer_norm(NodeContext& c) {
  auto& g = c.g();
  if (!graph::is_float(c.type(0).dtype)) c.refuse("spire runs this op on float tensors only");
  const int64_t rank = c.type(0).rank();
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), rank);
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  const DType dt = c.type(0).dtype;
  const Value x = c.value(0);
  const Value mean = g.mean(x, axes, true);
  const Value d = g.sub(x, mean);
  const Value var = g.mean(g.mul(d, d), axes, true);
  const Value stddev = g.sqrt(g.add(var, g.scalar(c.attr_float("epsilon", 1e-5f), dt)));
  // The optional outputs keep the reduced dims as 1 (ONNX's Mean and InvStdDev shapes).
  c.set_output(1, mean);
  if (c.output_used(2)) c.set_output(2, g.div(g.scalar(1.0, dt), stddev));
  Value y = g.div(d, stddev);
  y = g.mul(y, c.value(1));
  if (c.has_input(2)) y = g.add(y, c.value(2));
  c.set_output(0, y);
}

// y = alpha * A' B' + beta * C, A' and B' optionally transposed.
void gemm(NodeContext& c) {
  auto& g = c.g();
  if (c.type(0).rank() != 2 || c.type(1).rank() != 2) c.refuse("A and B must be 2-D");
  if (!graph::is_float(c.type(0).dtype)) c.refuse("spire runs this op on float tensors only");
  Value a = c.value(0), b = c.value(1);
  if (c.attr_int("transA", 0)) a = g.transpose(a);
  if (c.attr_int("transB", 0)) b = g.transpose(b);
  Value y = g.matmul(a, b);
  const double alpha = c.attr_float("alpha", 1.0f), beta = c.attr_float("beta", 1.0f);
  if (alpha != 1.0) y = g.mul(y, alpha);
  if (c.has_input(2) && beta != 0.0) {
    Value cc = c.value(2);
    if (beta != 1.0) cc = g.mul(cc, beta);
    y = g.add(y, cc);
  }
  c.set_output(0, y);
}

// numpy matmul: a 1-D operand is a row (left) or a column (right) whose dim is removed afterwards.
void matmul(NodeContext& c) {
  auto& g = c.g();
  if (!graph::is_float(c.type(0).dtype)) c.refuse("spire runs MatMul on float tensors only");
  Value a = c.value(0), b = c.value(1);
  const bool a1 = c.type(0).rank() == 1, b1 = c.type(1).rank() == 1;
  if (c.type(0).rank() == 0 || c.type(1).rank() == 0) c.refuse("MatMul of a scalar");
  if (a1) a = g.reshape(a, {1, c.type(0).shape[0]});
  if (b1) b = g.reshape(b, {c.type(1).shape[0], 1});
  Value y = g.matmul(a, b);
  if (a1 || b1) {
    Shape s = g.type(y).shape;
    if (b1) s.pop_back();
    if (a1) s.erase(s.end() - 1 - (b1 ? 0 : 1));
    y = g.reshape(y, s);
  }
  c.set_output(0, y);
}

}  // namespace

void register_nn_ops(OpTable& t) {
  add_graph_ops(t, {{"Conv", conv}, {"ConvTranspose", conv_transpose}, {"MaxUnpool", max_unpool},
                    {"BatchNormalization", batch_norm}, {"LayerNormalization", layer_norm}, {"Gemm", gemm},
                    {"MatMul", matmul}});
  t["MaxPool"] = {[](NodeContext& c) { pool(c, true); }, {}};
  t["AveragePool"] = {[](NodeContext& c) { pool(c, false); }, {}};
  t["GlobalAveragePool"] = {[](NodeContext& c) { global_pool(c, false); }, {}};
  t["GlobalMaxPool"] = {[](NodeContext& c) { global_pool(c, true); }, {}};
}

}  // namespace spire::onnx_import
