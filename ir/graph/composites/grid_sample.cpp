#include "ir/graph/composites/grid_sample.h"

#include <array>

#include <fmt/format.h>

namespace spire::graph {
namespace {

// x mod 2, for the whole numbers x holds: x - 2 floor(x / 2).
Value parity(Graph& g, Value x) { return g.sub(x, g.mul(g.op("floor", {g.mul(x, 0.5)}), 2.0)); }

// PyTorch's reflect_coordinates: x reflected into [lo, hi] (twice the bounds given), as often as it takes.
Value reflect(Graph& g, Value x, double twice_lo, double twice_hi) {
  const DType dt = g.type(x).dtype;
  if (twice_lo == twice_hi) return g.mul(x, 0.0);
  const double lo = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
  const Value in = g.op("abs", {g.sub(x, lo)});
  const Value flips = g.op("floor", {g.div(in, span)});
  const Value extra = g.sub(in, g.mul(flips, span));
  return g.where(g.compare(parity(g, flips), g.scalar(0.0, dt), CompareMode::Eq), g.add(extra, lo),
                 g.add(g.sub(g.scalar(span, dt), extra), lo));
}

Value clip(Graph& g, Value x, double hi) {
  const DType dt = g.type(x).dtype;
  return g.minimum(g.maximum(x, g.scalar(0.0, dt)), g.scalar(hi, dt));
}

// Round half to even (nearbyint), as PyTorch's nearest mode does.
Value round_even(Graph& g, Value x) {
  const DType dt = g.type(x).dtype;
  const Value f = g.op("floor", {x}), d = g.sub(x, f);
  const Value half = g.scalar(0.5, dt);
  return g.where(g.compare(d, half, CompareMode::Gt), g.add(f, 1.0),
                 g.where(g.compare(d, half, CompareMode::Lt), f, g.add(f, parity(g, f))));
}

// PyTorch's cubic convolution (A = -0.75) weights of the neighbours at -1, 0, 1 and 2 from a point t in [0, 1) past
// the second: |d| <= 1 weighs ((A + 2) |d| - (A + 3)) d^2 + 1, 1 < |d| < 2 weighs ((A |d| - 5A) |d| + 8A) |d| - 4A.
std::array<Value, 4> cubic_weights(Graph& g, Value t) {
  constexpr double A = -0.75;
  const DType dt = g.type(t).dtype;
  auto near = [&](Value d) { return g.add(g.mul(g.mul(g.sub(g.mul(d, A + 2), A + 3), d), d), 1.0); };
  auto far = [&](Value d) { return g.sub(g.mul(g.add(g.mul(g.sub(g.mul(d, A), 5 * A), d), 8 * A), d), 4 * A); };
  return {far(g.add(t, 1.0)), near(t), near(g.sub(g.scalar(1.0, dt), t)), far(g.sub(g.scalar(2.0, dt), t))};
}

}  // namespace

std::string grid_sample_refusal(const TensorType& x, const TensorType& grid, const GridSampleOptions& o) {
  if (!is_float(x.dtype) || grid.dtype != x.dtype) return "spire runs grid_sample on float tensors of one type";
  if (x.rank() != 4) return "spire samples 2-D inputs ([N, C, H, W]) only";
  if (grid.shape.size() != 4 || grid.shape[0] != x.shape[0] || grid.shape[3] != 2)
    return fmt::format("the grid {} must be [{}, Ho, Wo, 2]", shape_to_string(grid.shape), x.shape[0]);
  if (x.shape[0] * x.shape[2] * x.shape[3] > (int64_t(1) << 24)) return "an input of more than 2^24 pixels";
  if (o.mode != "bilinear" && o.mode != "nearest" && o.mode != "bicubic")
    return fmt::format("mode '{}' is not supported (bilinear, nearest, bicubic)", o.mode);
  if (o.padding != "zeros" && o.padding != "border" && o.padding != "reflection")
    return fmt::format("padding_mode '{}'", o.padding);
  return "";
}

Tensor grid_sample_image_starts(int64_t n, int64_t h, int64_t w) {
  Tensor starts(DType::F32, {n, 1, 1});
  for (int64_t b = 0; b < n; ++b) starts.data[size_t(b)] = double(b * h * w);
  return starts;
}

Value grid_sample(Graph& g, Value x_in, Value grid_in, Value image_starts, const GridSampleOptions& o) {
  const TensorType x = g.type(x_in), grid = g.type(grid_in);
  const int64_t n = x.shape[0], ch = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t ho = grid.shape[1], wo = grid.shape[2];
  const DType dt = x.dtype;
  const bool align = o.align_corners;

  // Pixel coordinates of each point, [N, Ho, Wo], as the grid gives them.
  auto coordinate = [&](int64_t which, int64_t size) {
    Value v = g.reshape(g.op("slice", {grid_in}, {{"starts", std::vector<int64_t>{0, 0, 0, which}},
                                                  {"steps", std::vector<int64_t>(4, 1)}, {"shape", Shape{n, ho, wo, 1}}}),
                        {n, ho, wo});
    return align ? g.mul(g.add(v, 1.0), 0.5 * double(size - 1)) : g.div(g.sub(g.mul(g.add(v, 1.0), double(size)), 1.0), 2.0);
  };
  // A coordinate moved inside the input as the padding mode says (border: clipped; reflection: reflected, then
  // clipped). Bilinear and nearest move the point itself, bicubic each of its 16 neighbours, as PyTorch does.
  auto padded = [&](Value v, int64_t size) {
    if (o.padding == "border") v = clip(g, v, double(size - 1));
    if (o.padding == "reflection") {
      v = align ? reflect(g, v, 0, 2.0 * double(size - 1)) : reflect(g, v, -1, 2.0 * double(size) - 1);
      v = clip(g, v, double(size - 1));
    }
    return v;
  };
  const Value ix = coordinate(0, w), iy = coordinate(1, h);
  // The input as rows [N H W, C]; each image's rows start at n H W.
  const Value rows = g.reshape(g.permute(x_in, {0, 2, 3, 1}), {n * h * w, ch});
  // The value at whole-number pixel (px, py) [N, Ho, Wo], zero outside the input: [N, Ho, Wo, C].
  auto at = [&](Value px, Value py) {
    const Value zero = g.scalar(0.0, dt);
    Value inside = g.compare(px, zero, CompareMode::Ge);
    inside = g.where(inside, g.compare(px, g.scalar(double(w - 1), dt), CompareMode::Le), inside);
    inside = g.where(inside, g.compare(py, zero, CompareMode::Ge), inside);
    inside = g.where(inside, g.compare(py, g.scalar(double(h - 1), dt), CompareMode::Le), inside);
    // Positions as float32 row numbers (exact below 2^24), row 0 where the pixel is outside.
    Value row = g.add(g.add(g.mul(py, double(w)), px), g.cast(image_starts, dt));
    row = g.where(inside, row, zero);
    const Value index = g.cast(row, DType::I64);
    const Value v = g.op("gather", {rows, index}, {{"axis", int64_t(0)}});  // [N, Ho, Wo, C]
    return g.where(g.reshape(inside, {n, ho, wo, 1}), v, g.scalar(0.0, dt));
  };
  Value y;
  auto as_weight = [&](Value v) { return g.reshape(v, {n, ho, wo, 1}); };
  if (o.mode == "nearest") {
    y = at(round_even(g, padded(ix, w)), round_even(g, padded(iy, h)));
  } else if (o.mode == "bicubic") {
    // The 4x4 neighbours from floor - 1 to floor + 2 along each axis, weighed by the cubic convolution of their
    // distance: along x within each row of four, then along y.
    const Value x0 = g.op("floor", {ix}), y0 = g.op("floor", {iy});
    const std::array<Value, 4> wx = cubic_weights(g, g.sub(ix, x0)), wy = cubic_weights(g, g.sub(iy, y0));
    std::array<Value, 4> px;
    for (int dx = 0; dx < 4; ++dx) px[size_t(dx)] = padded(g.add(x0, double(dx - 1)), w);
    for (int dy = 0; dy < 4; ++dy) {
      const Value py = padded(g.add(y0, double(dy - 1)), h);
      Value line;
      for (int dx = 0; dx < 4; ++dx) {
        const Value term = g.mul(at(px[size_t(dx)], py), as_weight(wx[size_t(dx)]));
        line = dx == 0 ? term : g.add(line, term);
      }
      const Value term = g.mul(line, as_weight(wy[size_t(dy)]));
      y = dy == 0 ? term : g.add(y, term);
    }
  } else {
    const Value px = padded(ix, w), py = padded(iy, h);
    const Value x0 = g.op("floor", {px}), y0 = g.op("floor", {py});
    const Value x1 = g.add(x0, 1.0), y1 = g.add(y0, 1.0);
    const Value fx = g.sub(px, x0), fy = g.sub(py, y0);
    const Value one = g.scalar(1.0, dt);
    auto weight = [&](Value a, Value b) { return as_weight(g.mul(a, b)); };
    const Value gx = g.sub(one, fx), gy = g.sub(one, fy);
    y = g.add(g.add(g.mul(at(x0, y0), weight(gx, gy)), g.mul(at(x1, y0), weight(fx, gy))),
              g.add(g.mul(at(x0, y1), weight(gx, fy)), g.mul(at(x1, y1), weight(fx, fy))));
  }
  return g.permute(y, {0, 3, 1, 2});
}

}  // namespace spire::graph
