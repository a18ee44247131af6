// RoiAlign (opset 16, average mode): each region of interest [x1, y1, x2, y2] of image batch_indices[r] cut into
// output_height x output_width bins, each bin the mean of sampling_ratio^2 bilinear samples at evenly spaced points,
// with ONNX Runtime's rules at the edges (a point more than one pixel outside reads 0; one within clamps to the
// border). The regions are data, so the points are computed on the device; each neighbour is a row of the input seen
// as [N H W, C] that the graph's gather op reads, and a point outside (or an image index outside the batch) reads
// row 0 with weight 0, never out of bounds. sampling_ratio 0 (a count that depends on each region's size) and max
// mode are refused.
#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

void roi_align(NodeContext& c) {
  auto& g = c.g();
  const graph::TensorType x = c.type(0), rois = c.type(1), batch = c.type(2);
  if (!graph::is_float(x.dtype) || rois.dtype != x.dtype) c.refuse("spire runs RoiAlign on float tensors of one type");
  if (x.rank() != 4) c.refuse("the input must be [N, C, H, W]");
  if (rois.rank() != 2 || rois.shape[1] != 4) c.refuse("rois must be [R, 4]");
  const int64_t r = rois.shape[0], n = x.shape[0], ch = x.shape[1], h = x.shape[2], w = x.shape[3];
  if (!graph::is_int(batch.dtype) || batch.shape != Shape{r}) c.refuse(fmt::format("batch_indices must be [{}] integers", r));
  if (c.attr_string("mode", "avg") != "avg") c.refuse(fmt::format("mode '{}' is not supported (avg)", c.attr_string("mode", "avg")));
  const int64_t ph = c.attr_int("output_height", 1), pw = c.attr_int("output_width", 1), ratio = c.attr_int("sampling_ratio", 0);
  if (ratio == 0) c.refuse("sampling_ratio 0 (as many samples as each region's size gives) is not supported");
  if (ph < 1 || pw < 1 || ratio < 0 || ph * pw * ratio * ratio > (int64_t(1) << 20))
    c.refuse(fmt::format("{} x {} bins of {} samples", ph, pw, ratio * ratio));
  if (n * h * w > (int64_t(1) << 24)) c.refuse("an input of more than 2^24 pixels");
  const std::string transform = c.attr_string("coordinate_transformation_mode", "half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel") c.refuse(fmt::format("coordinate_transformation_mode '{}'", transform));
  const bool half_pixel = transform == "half_pixel";
  const double scale = c.attr_float("spatial_scale", 1.0f);
  const DType dt = x.dtype;
  const Value zero = g.scalar(0.0, dt);

  // A region's corner coordinate k (x1, y1, x2, y2) as [R, 1, 1, 1, 1], scaled and shifted.
  auto corner = [&](int64_t k) {
    const Value v = g.op("slice", {c.value(1)}, {{"starts", std::vector<int64_t>{0, k}}, {"steps", std::vector<int64_t>{1, 1}},
                                                 {"shape", Shape{r, 1}}});
    return g.sub(g.mul(g.reshape(v, {r, 1, 1, 1, 1}), scale), half_pixel ? 0.5 : 0.0);
  };
  // The sample points along one axis, [R, bins, 1, ratio, 1] (y) or [R, 1, bins, 1, ratio] (x): start + bin (b +
  // (i + 0.5) / ratio), with the bin's extent at least 1 pixel for output_half_pixel (the legacy rule).
  auto points = [&](Value start, Value end, int64_t bins, bool is_y) {
    Value extent = g.sub(end, start);
    if (!half_pixel) extent = g.maximum(extent, g.scalar(1.0, dt));
    const Value bin = g.div(extent, double(bins));
    Tensor offsets(dt, is_y ? Shape{1, bins, 1, ratio, 1} : Shape{1, 1, bins, 1, ratio});
    for (int64_t b = 0; b < bins; ++b)
      for (int64_t i = 0; i < ratio; ++i) offsets.data[size_t(b * ratio + i)] = double(b) + (double(i) + 0.5) / double(ratio);
    return g.add(start, g.mul(bin, c.constant_value(offsets, fmt::format("{}.{}", c.node().output(0), is_y ? "rows" : "cols"))));
  };
  const Value ys = points(corner(1), corner(3), ph, true), xs = points(corner(0), corner(2), pw, false);
  // ONNX Runtime's edge rules along one axis of `size`: a point below -1 or above size is out; the rest clamp to
  // [0, size - 1], the upper neighbour then the lower one. Returns (low, high, fraction, inside).
  struct Axis {
    Value low, high, frac, inside;
  };
  auto axis = [&](Value p, int64_t size) {
    Axis a;
    a.inside = g.where(g.compare(p, g.scalar(-1.0, dt), CompareMode::Ge),
                       g.compare(p, g.scalar(double(size), dt), CompareMode::Le), g.scalar(0.0, DType::Bool));
    const Value q = g.maximum(p, zero);
    const Value top = g.scalar(double(size - 1), dt);
    const Value low = g.op("floor", {q});
    const Value at_edge = g.compare(low, top, CompareMode::Ge);
    a.low = g.where(at_edge, top, low);
    a.high = g.where(at_edge, top, g.add(low, 1.0));
    a.frac = g.where(at_edge, zero, g.sub(q, low));
    return a;
  };
  const Axis ay = axis(ys, h), ax = axis(xs, w);
  // The image of each region, its rows' start, and whether it is in the batch.
  const Value image = g.reshape(g.cast(c.value(2), dt), {r, 1, 1, 1, 1});
  const Value in_batch = g.where(g.compare(image, zero, CompareMode::Ge),
                                 g.compare(image, g.scalar(double(n - 1), dt), CompareMode::Le), g.scalar(0.0, DType::Bool));
  const Value valid = g.where(in_batch, g.where(ay.inside, ax.inside, ay.inside), in_batch);  // [R, ph, pw, ratio, ratio]
  const Value first_row = g.mul(image, double(h * w));
  const Value rows = g.reshape(g.permute(c.value(0), {0, 2, 3, 1}), {n * h * w, ch});
  const Shape grid = {r, ph, pw, ratio, ratio};
  auto read = [&](Value py, Value px, Value weight) {
    Value row = g.add(g.add(first_row, g.mul(py, double(w))), px);
    row = g.where(valid, g.broadcast_to(row, grid), zero);
    const Value v = g.op("gather", {rows, g.cast(row, DType::I64)}, {{"axis", int64_t(0)}});  // [R, ph, pw, ratio, ratio, C]
    const Value wt = g.where(valid, g.broadcast_to(weight, grid), zero);
    return g.mul(v, g.reshape(wt, {r, ph, pw, ratio, ratio, 1}));
  };
  const Value one = g.scalar(1.0, dt);
  const Value hy = g.sub(one, ay.frac), hx = g.sub(one, ax.frac);
  const Value sum = g.add(g.add(read(ay.low, ax.low, g.mul(hy, hx)), read(ay.low, ax.high, g.mul(hy, ax.frac))),
                          g.add(read(ay.high, ax.low, g.mul(ay.frac, hx)), read(ay.high, ax.high, g.mul(ay.frac, ax.frac))));
  const Value mean = g.div(g.sum(sum, {3, 4}), double(ratio * ratio));  // [R, ph, pw, C]
  c.set_output(0, g.permute(mean, {0, 3, 1, 2}));
}

}  // namespace

void register_roi_align_ops(OpTable& t) { t["RoiAlign"] = {roi_align, {}}; }

}  // namespace spire::onnx_import
