// Signal ops: DFT and STFT, as products with the DFT's cosine and sine matrices (known at import from the length):
// Y = X W with W[n, k] = e^(-+2 pi i k n / N), the real and imaginary parts each two matmuls. That is N x K work
// per signal, like a direct DFT; an FFT kernel of its own is the way to long signals. The angles are reduced to
// k n mod N before the cosine and sine, and the quarter turns are exact, so the zeros a real signal's spectrum has
// come out as zeros. MelWeightMatrix is a constant computed at import.
#include <cmath>

#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

// The longest signal the matrix form takes (N x K constants).
constexpr int64_t kMaxLength = 4096;

// cos and sin of 2 pi m / n, exact at the quarter turns.
std::pair<double, double> turn(int64_t m, int64_t n) {
  m %= n;
  if ((4 * m) % n == 0) {
    switch (4 * m / n) {
      case 0: return {1, 0};
      case 1: return {0, 1};
      case 2: return {-1, 0};
      default: return {0, -1};
    }
  }
  const double a = 2.0 * M_PI * double(m) / double(n);
  return {std::cos(a), std::sin(a)};
}

// The DFT of the rows of re (and im, when the signal is complex), [rows, n], over `length` points (the rows cut or
// padded with zeros to it), to `bins` outputs: returns [rows, bins, 2] (real, imaginary).
Value dft_rows(NodeContext& c, Value re, Value im, int64_t length, int64_t bins, bool inverse, const std::string& name) {
  auto& g = c.g();
  const DType dt = g.type(re).dtype;
  const int64_t n = g.type(re).shape[1], rows = g.type(re).shape[0];
  // Rows beyond the signal are zeros: only min(n, length) rows of the matrices are read.
  const int64_t used = std::min(n, length);
  auto fit = [&](Value v) {
    if (!v.valid() || used == n) return v;
    return g.op("slice", {v}, {{"starts", std::vector<int64_t>{0, 0}}, {"steps", std::vector<int64_t>{1, 1}},
                               {"shape", Shape{rows, used}}});
  };
  re = fit(re);
  im = fit(im);
  Tensor cosines(dt, {used, bins}), sines(dt, {used, bins});
  for (int64_t t = 0; t < used; ++t)
    for (int64_t k = 0; k < bins; ++k) {
      const auto [cs, sn] = turn(k * t, length);
      cosines.data[size_t(t * bins + k)] = cs;
      sines.data[size_t(t * bins + k)] = sn;
    }
  const Value cm = c.constant_value(cosines, name + ".cos"), sm = c.constant_value(sines, name + ".sin");
  // Forward: (a + ib)(cos - i sin) = a cos + b sin + i (b cos - a sin); inverse: the conjugate turn, then / N.
  const double s = inverse ? -1.0 : 1.0;
  Value yr = g.matmul(re, cm), yi = g.mul(g.matmul(re, sm), -s);
  if (im.valid()) {
    yr = g.add(yr, g.mul(g.matmul(im, sm), s));
    yi = g.add(yi, g.matmul(im, cm));
  }
  if (inverse) {
    yr = g.div(yr, double(length));
    yi = g.div(yi, double(length));
  }
  return g.op("concat", {g.reshape(yr, {rows, bins, 1}), g.reshape(yi, {rows, bins, 1})}, {{"axis", int64_t(2)}});
}

// The signal [.., n, .., 1 or 2] with its `axis` moved last and split into real and imaginary rows [rows, n].
struct Rows {
  Value re, im;
  Shape lead;  // the other axes, in order (the last, the complex one, excluded)
  std::vector<int64_t> back;  // the permutation that returns [lead.., bins, 2] to the input's order
};
Rows rows_of(NodeContext& c, Value x, int64_t axis) {
  auto& g = c.g();
  const Shape s = g.type(x).shape;
  const int64_t rank = int64_t(s.size()), parts = s.back();
  if (parts != 1 && parts != 2) c.refuse(fmt::format("the last axis has {} entries; it must be 1 (real) or 2 (complex)", parts));
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  perm.push_back(rank - 1);
  Rows r;
  for (int64_t d = 0; d + 2 < rank; ++d) r.lead.push_back(s[size_t(perm[size_t(d)])]);
  r.back.assign(size_t(rank), 0);
  for (int64_t d = 0; d < rank; ++d) r.back[size_t(perm[size_t(d)])] = d;
  const Value moved = g.permute(x, perm);  // [lead.., n, parts]
  int64_t rows = 1;
  for (int64_t v : r.lead) rows *= v;
  const int64_t n = s[size_t(axis)];
  auto part = [&](int64_t i) {
    Shape one = g.type(moved).shape;
    one.back() = 1;
    std::vector<int64_t> starts(size_t(rank), 0);
    starts.back() = i;
    return g.reshape(g.op("slice", {moved}, {{"starts", starts}, {"steps", std::vector<int64_t>(size_t(rank), 1)}, {"shape", one}}),
                     {rows, n});
  };
  r.re = part(0);
  if (parts == 2) r.im = part(1);
  return r;
}

int64_t scalar_int(NodeContext& c, int i, const std::string& what) {
  const auto v = c.require_ints(i, what);
  if (v.size() != 1) c.refuse(fmt::format("{} must be one value", what));
  return v[0];
}

// DFT (opset 17): along `axis` of [batch, signal.., 1 or 2], over dft_length points (default the axis's length),
// inverse or forward, onesided keeping the first N/2 + 1 bins.
void dft(NodeContext& c) {
  auto& g = c.g();
  if (!graph::is_float(c.type(0).dtype)) c.refuse("spire runs DFT on float tensors only");
  const int64_t rank = c.type(0).rank();
  if (rank < 3) c.refuse("the input needs rank >= 3 ([batch, signal.., 1 or 2])");
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += rank;  // from the back of the whole tensor, whose last axis is the complex one
  if (axis < 1 || axis > rank - 2)
    c.refuse(fmt::format("axis {} is not a signal axis of a rank-{} input", c.attr_int("axis", 1), rank));
  const int64_t n = c.type(0).shape[size_t(axis)];
  const int64_t length = c.has_input(1) ? scalar_int(c, 1, "dft_length") : n;
  if (length < 1 || length > kMaxLength) c.refuse(fmt::format("a DFT of {} points (spire takes 1 to {})", length, kMaxLength));
  const bool inverse = c.attr_int("inverse", 0) != 0, onesided = c.attr_int("onesided", 0) != 0;
  if (inverse && onesided) c.refuse("onesided inverse DFTs are not supported");
  const int64_t bins = onesided ? length / 2 + 1 : length;
  const Rows r = rows_of(c, c.value(0), axis);
  Value y = dft_rows(c, r.re, r.im, length, bins, inverse, c.node().output(0));
  Shape out = r.lead;
  out.push_back(bins);
  out.push_back(2);
  c.set_output(0, g.permute(g.reshape(y, out), r.back));
}

// STFT (opset 17): frames of frame_length every frame_step along [batch, length, 1 or 2], each times the window,
// then their DFT (onesided by default): [batch, frames, bins, 2]. The frames are one gather at positions known at
// import.
void stft(NodeContext& c) {
  auto& g = c.g();
  const graph::TensorType s = c.type(0);
  if (!graph::is_float(s.dtype)) c.refuse("spire runs STFT on float tensors only");
  if (s.rank() != 3) c.refuse("the signal must be [batch, length, 1 or 2]");
  const int64_t step = scalar_int(c, 1, "frame_step");
  int64_t frame = -1;
  if (c.has_input(3)) frame = scalar_int(c, 3, "frame_length");
  if (c.has_input(2)) {
    if (c.type(2).rank() != 1) c.refuse("the window must be 1-D");
    if (frame >= 0 && frame != c.type(2).shape[0]) c.refuse("frame_length differs from the window's length");
    frame = c.type(2).shape[0];
  }
  if (frame < 1) c.refuse("STFT needs a window or a frame_length");
  const int64_t length = s.shape[1], batch = s.shape[0], parts = s.shape[2];
  if (step < 1 || frame > length || frame > kMaxLength)
    c.refuse(fmt::format("frames of {} every {} over a signal of {}", frame, step, length));
  const int64_t frames = (length - frame) / step + 1;
  const bool onesided = c.attr_int("onesided", 1) != 0;
  const int64_t bins = onesided ? frame / 2 + 1 : frame;
  Tensor at(DType::I64, {frames * frame});
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t t = 0; t < frame; ++t) at.data[size_t(f * frame + t)] = double(f * step + t);
  Value x = g.op("gather", {c.value(0), c.constant_value(at, c.node().output(0) + ".frames")}, {{"axis", int64_t(1)}});
  x = g.reshape(x, {batch, frames, frame, parts});
  if (c.has_input(2)) x = g.mul(x, g.reshape(c.value(2), {1, 1, frame, 1}));
  const Rows r = rows_of(c, x, 2);
  const Value y = dft_rows(c, r.re, r.im, frame, bins, false, c.node().output(0));
  c.set_output(0, g.reshape(y, {batch, frames, bins, 2}));
}

// MelWeightMatrix (opset 17): the [dft_length / 2 + 1, num_mel_bins] matrix of triangular filters between
// num_mel_bins + 2 points spaced evenly in mel from lower_edge_hertz to upper_edge_hertz, each point moved to the
// spectrogram bin below it, as ONNX's reference computes (the mels in float32, as its numpy scalars are, then the bins
// in double). All inputs known at import: a constant.
void mel_weight_matrix(NodeContext& c) {
  const int64_t mels = scalar_int(c, 0, "num_mel_bins"), length = scalar_int(c, 1, "dft_length");
  const int64_t rate = scalar_int(c, 2, "sample_rate");
  auto hertz = [&](int i, const char* what) {
    const Tensor& t = c.require_constant(i, what);
    if (t.data.size() != 1) c.refuse(fmt::format("{} must be one value", what));
    return float(t.data[0]);
  };
  const float lower = hertz(3, "lower_edge_hertz"), upper = hertz(4, "upper_edge_hertz");
  if (mels < 1 || length < 1 || rate < 1 || mels > kMaxLength || length > 2 * kMaxLength || !(lower >= 0) || !(upper > lower))
    c.refuse(fmt::format("{} mel bins of a {}-point DFT at {} Hz from {} to {} Hz", mels, length, rate, lower, upper));
  const DType dtype = dtype_of_onnx(int(c.attr_int("output_datatype", 1)), "output_datatype");
  const int64_t bins = length / 2 + 1;
  const float low_mel = 2595.0f * std::log10(1.0f + lower / 700.0f), high_mel = 2595.0f * std::log10(1.0f + upper / 700.0f);
  const float step = (high_mel - low_mel) / float(mels + 2);
  std::vector<int64_t> at(size_t(mels + 2));
  for (int64_t k = 0; k < mels + 2; ++k) {
    const double mel = double(k) * double(step) + double(low_mel);
    const double hz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
    at[size_t(k)] = int64_t(std::floor(double(length + 1) * hz / double(rate)));
    if (at[size_t(k)] < 0 || at[size_t(k)] >= bins + 1) c.refuse(fmt::format("mel point {} falls outside the spectrogram", k));
  }
  Tensor out(dtype, {bins, mels});
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j >= 0 && j < bins) out.data[size_t(j * mels + i)] = v;
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t left = at[size_t(i)], center = at[size_t(i + 1)], right = at[size_t(i + 2)];
    if (center == left) {
      set(center, i, 1.0);
    } else {
      for (int64_t j = left; j <= center; ++j) set(j, i, double(j - left) / double(center - left));
    }
    for (int64_t j = center; j < right; ++j) set(j, i, double(right - j) / double(right - center));
  }
  c.set_output(0, out.round_to_dtype());
}

}  // namespace

void register_signal_ops(OpTable& t) {
  add_graph_ops(t, {{"DFT", dft}, {"STFT", stft}});
  t["MelWeightMatrix"] = {mel_weight_matrix, mel_weight_matrix};
}

}  // namespace spire::onnx_import
