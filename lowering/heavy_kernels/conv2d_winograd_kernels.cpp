#include "lowering/heavy_kernels/conv2d_winograd_kernels.h"

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

namespace {

constexpr uint32_t kThreads = 256;

using Vec4 = std::array<Val, 4>;

// B^T d (or d B, applied to a column instead of a row): the input transform along one axis.
Vec4 input_1d(const Vec4& d) { return {d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]}; }

// G g along one axis: 3 taps to 4.
Vec4 weight_1d(Val g0, Val g1, Val g2) {
  Val half_sum = (g0 + g2) * 0.5;
  Val half_mid = g1 * 0.5;
  return {g0, half_sum + half_mid, half_sum - half_mid, g2};
}

// A^T m along one axis: 4 to 2 outputs.
std::array<Val, 2> output_1d(const Vec4& m) { return {m[0] + m[1] + m[2], m[1] - m[2] - m[3]}; }

std::string checked_name(const char* stage, const Conv2dShape& s, Type t) {
  if (!conv2d_winograd_applies(s))
    throw std::invalid_argument(fmt::format("conv2d {}: Winograd's F(2x2, 3x3) takes 3x3 windows at stride 1 without "
                                            "dilation or groups", s.text()));
  index_u32(s.n * s.cin * s.h * s.w, "conv2d input elements");
  index_u32(s.n * s.cout * s.ho * s.wo, "conv2d output elements");
  index_u32(16 * std::max(s.cin, s.cout) * conv2d_winograd_tiles(s), "conv2d Winograd transformed elements");
  return fmt::format("conv2d_winograd_{}_{}_{}", stage, s.text(), float_suffix(t, "conv2d"));
}

// The tile grid of one image.
struct Tiles {
  uint32_t across, down, per_image, all;
  explicit Tiles(const Conv2dShape& s)
      : across(uint32_t((s.wo + 1) / 2)), down(uint32_t((s.ho + 1) / 2)), per_image(across * down),
        all(uint32_t(conv2d_winograd_tiles(s))) {}
};

}  // namespace

bool conv2d_winograd_applies(const Conv2dShape& s) {
  return s.kh == 3 && s.kw == 3 && s.stride_h == 1 && s.stride_w == 1 && s.dil_h == 1 && s.dil_w == 1 && s.groups == 1;
}

Conv2dShape conv2d_winograd_grad_input_shape(const Conv2dShape& s) {
  if (!conv2d_winograd_applies(s) || s.pad_h > 2 || s.pad_w > 2)
    throw std::invalid_argument(fmt::format("conv2d_grad_input {}: Winograd's F(2x2, 3x3) takes 3x3 windows at stride 1 "
                                            "without dilation or groups, padded by at most 2", s.text()));
  Conv2dShape e = s;
  e.cin = s.cout, e.h = s.ho, e.w = s.wo;
  e.cout = s.cin, e.ho = s.h, e.wo = s.w;
  e.pad_h = 2 - s.pad_h, e.pad_w = 2 - s.pad_w;
  return e;
}

int64_t conv2d_winograd_tiles(const Conv2dShape& s) { return s.n * ((s.ho + 1) / 2) * ((s.wo + 1) / 2); }

MatmulShape conv2d_winograd_gemm_shape(const Conv2dShape& s) {
  MatmulShape g;
  g.m = s.cout;
  g.k = s.cin;
  g.n = conv2d_winograd_tiles(s);
  g.batch = {16};
  g.a_batch = {16};
  g.b_batch = {16};
  g.a_batch_strides = {g.m * g.k};
  g.b_batch_strides = {g.k * g.n};
  return g;
}

HeavyKernel conv2d_winograd_weight_kernel(const Conv2dShape& s, Type t, bool flipped) {
  std::string name = checked_name(flipped ? "weights_flipped" : "weights", s, t);
  const uint32_t cout = uint32_t(s.cout), cin = uint32_t(s.cin);
  const uint32_t pairs = cout * cin;  // (co, ci), ci fastest: U's rows are [Cout][Cin]
  if (pairs == 0) return empty_result(name);
  KernelBuilder kb(std::move(name), kThreads);
  Buf w = kb.buffer("w", t, Access::Read);
  Buf u = kb.buffer("u", t, Access::Write);
  Val e = kb.global_id();
  kb.if_(e < pairs, [&] {
    // Tap (r, c) of the window: w[co, ci, r, c], or flipped w[ci, co, 2 - r, 2 - c] of the original [Cin, Cout] weights.
    Val base = flipped ? ((e % cin) * cout + e / cin) * 9u : e * 9u;
    auto tap = [&](uint32_t r, uint32_t c) { return flipped ? Val(w[base + ((2 - r) * 3 + (2 - c))]) : Val(w[base + (r * 3 + c)]); };
    // G g: each column of the window to 4 rows, then each of those rows to 4 columns (G g G^T).
    std::array<Vec4, 3> cols;
    for (uint32_t c = 0; c < 3; ++c) cols[c] = weight_1d(tap(0, c), tap(1, c), tap(2, c));
    for (uint32_t r = 0; r < 4; ++r) {
      const Vec4 row = weight_1d(cols[0][r], cols[1][r], cols[2][r]);
      for (uint32_t c = 0; c < 4; ++c) u[e + (r * 4 + c) * pairs] = row[c];
    }
  });
  return {kb.finish(), groups_for_threads(pairs, kThreads)};
}

HeavyKernel conv2d_winograd_input_kernel(const Conv2dShape& s, Type t) {
  std::string name = checked_name("input", s, t);
  const Tiles tiles(s);
  const uint32_t cin = uint32_t(s.cin), H = uint32_t(s.h), W = uint32_t(s.w);
  const uint32_t ph = uint32_t(s.pad_h), pw = uint32_t(s.pad_w);
  const uint32_t count = cin * tiles.all;  // (ci, tile), tile fastest: V's rows are [Cin][tiles]
  if (count == 0) return empty_result(name);
  KernelBuilder kb(std::move(name), kThreads);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf v = kb.buffer("v", t, Access::Write);
  Val e = kb.global_id();
  kb.if_(e < count, [&] {
    Val ci = e / tiles.all, tile = e % tiles.all;
    Val n = tile / tiles.per_image, in_image = tile % tiles.per_image;
    // The patch's first row and column; before the padding they wrap around as unsigned numbers and fail `< H`.
    Val row0 = (in_image / tiles.across) * 2u - ph, col0 = (in_image % tiles.across) * 2u - pw;
    Val plane = (n * cin + ci) * (H * W);
    std::array<Vec4, 4> d;  // d[r][c]
    for (uint32_t r = 0; r < 4; ++r)
      for (uint32_t c = 0; c < 4; ++c) {
        Val ih = row0 + r, iw = col0 + c;
        d[r][c] = select((ih < H) & (iw < W), Val(x[plane + min(ih, H - 1) * W + min(iw, W - 1)]), kb.constant(t, 0));
      }
    // B^T d: along each column; then (B^T d) B along each row.
    std::array<Vec4, 4> cols;
    for (uint32_t c = 0; c < 4; ++c) cols[c] = input_1d({d[0][c], d[1][c], d[2][c], d[3][c]});
    for (uint32_t r = 0; r < 4; ++r) {
      const Vec4 row = input_1d({cols[0][r], cols[1][r], cols[2][r], cols[3][r]});
      for (uint32_t c = 0; c < 4; ++c) v[e + (r * 4 + c) * count] = row[c];
    }
  });
  return {kb.finish(), groups_for_threads(count, kThreads)};
}

HeavyKernel conv2d_winograd_output_kernel(const Conv2dShape& s, Type t) {
  std::string name = checked_name("output", s, t);
  const Tiles tiles(s);
  const uint32_t cout = uint32_t(s.cout), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  const uint32_t count = cout * tiles.all;  // (co, tile), tile fastest: M's rows are [Cout][tiles]
  if (count == 0) return empty_result(name);
  KernelBuilder kb(std::move(name), kThreads);
  Buf m = kb.buffer("m", t, Access::Read);
  Buf y = kb.buffer("y", t, Access::Write);
  Val e = kb.global_id();
  kb.if_(e < count, [&] {
    Val co = e / tiles.all, tile = e % tiles.all;
    Val n = tile / tiles.per_image, in_image = tile % tiles.per_image;
    Val oh = (in_image / tiles.across) * 2u, ow = (in_image % tiles.across) * 2u;
    std::array<Vec4, 4> mm;
    for (uint32_t r = 0; r < 4; ++r)
      for (uint32_t c = 0; c < 4; ++c) mm[r][c] = Val(m[e + (r * 4 + c) * count]);
    // A^T M along each column, then along each row.
    std::array<std::array<Val, 2>, 4> cols;
    for (uint32_t c = 0; c < 4; ++c) cols[c] = output_1d({mm[0][c], mm[1][c], mm[2][c], mm[3][c]});
    Val at = ((n * cout + co) * Ho + oh) * Wo + ow;
    for (uint32_t r = 0; r < 2; ++r) {
      const std::array<Val, 2> row = output_1d({cols[0][r], cols[1][r], cols[2][r], cols[3][r]});
      for (uint32_t c = 0; c < 2; ++c) {
        // Only the bottom row and right column of tiles can hang over an odd edge.
        auto store = [&] { y[at + (r * Wo + c)] = row[c]; };
        std::optional<Val> inside;
        auto also = [&](Val cond) { inside = inside ? (*inside & cond) : cond; };
        if (r == 1 && Ho % 2) also(oh + 1u < Ho);
        if (c == 1 && Wo % 2) also(ow + 1u < Wo);
        if (inside) kb.if_(*inside, store);
        else store();
      }
    }
  });
  return {kb.finish(), groups_for_threads(count, kThreads)};
}

}  // namespace spire::lowering::heavy
