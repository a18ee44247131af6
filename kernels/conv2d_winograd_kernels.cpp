#include "kernels/conv2d_winograd_kernels.h"

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

namespace {

// Values along one axis of a tile, and a square patch of them ([row][column]).
using Vec = std::vector<Val>;
using Square = std::vector<Vec>;

// The transforms along one axis, for output tiles of 2 (F(2x2, 3x3): points 0, 1, -1 and infinity) and 4 (F(4x4,
// 3x3): points 0, 1, -1, 1/2, -2 and infinity). F(4x4, 3x3)'s points: Lavin and Gray's 0, +-1, +-2 and infinity left
// 1.1-1.4e-5 of max-norm error in float32 at resnet18's 256 and 512 channels with signed inputs, over conv2d's 1e-5
// tolerance; 1/2 in place of 2 keeps every constant of the input and output transforms a power of two or a sum of two,
// and measured 3x less (tests/tuning/winograd_precision_test.cpp). alpha = tile + 2 is the transformed domain's side.
//
// B^T d (or d B, applied to a column instead of a row): the input transform along one axis, alpha values to alpha.
Vec input_1d(const Vec& d) {
  if (d.size() == 4) return {d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]};
  return {d[0] - d[1] * 1.5 - d[2] * 2.0 + d[3] * 1.5 + d[4],
          d[2] * 0.5 - d[1] + d[3] * 2.5 + d[4],
          d[1] - d[2] * 2.5 + d[3] * 0.5 + d[4],
          (d[3] - d[1]) * 2.0 - d[2] + d[4],
          (d[1] - d[3]) * 0.5 - d[2] + d[4],
          d[1] - d[2] * 1.5 - d[3] * 2.0 + d[4] * 1.5 + d[5]};
}

// G g along one axis: 3 taps to alpha.
Vec weight_1d(const Vec& g, uint32_t tile) {
  if (tile == 2) {
    Val half_sum = (g[0] + g[2]) * 0.5;
    Val half_mid = g[1] * 0.5;
    return {g[0], half_sum + half_mid, half_sum - half_mid, g[2]};
  }
  Val outer = g[0] + g[2];
  return {g[0], (outer + g[1]) * (1.0 / 3), (g[1] - outer) * (1.0 / 3), (g[0] * 4.0 + g[1] * 2.0 + g[2]) * (-4.0 / 15),
          (g[0] - g[1] * 2.0 + g[2] * 4.0) * (1.0 / 15), g[2]};
}

// A^T m along one axis: alpha values to the tile's outputs.
Vec output_1d(const Vec& m) {
  if (m.size() == 4) return {m[0] + m[1] + m[2], m[1] - m[2] - m[3]};
  Val sum12 = m[1] + m[2], diff12 = m[1] - m[2];
  return {m[0] + sum12 + m[3] + m[4], diff12 + m[3] * 0.5 - m[4] * 2.0, sum12 + m[3] * 0.25 + m[4] * 4.0,
          diff12 + m[3] * 0.125 - m[4] * 8.0 + m[5]};
}

// The weight gradient's transforms are the transposes of the forward's output and weight transforms.
// A gy along one axis: the tile's gradients to alpha.
Vec grad_y_1d(const Vec& g) {
  if (g.size() == 2) return {g[0], g[0] + g[1], g[0] - g[1], g[1] * -1.0};
  Val even = g[0] + g[2], odd = g[1] + g[3];
  return {g[0], even + odd, even - odd, g[0] + g[1] * 0.5 + g[2] * 0.25 + g[3] * 0.125,
          g[0] - g[1] * 2.0 + g[2] * 4.0 - g[3] * 8.0, g[3]};
}

// G^T n along one axis: alpha values to the 3 taps.
Vec grad_weight_1d(const Vec& n) {
  if (n.size() == 4) {
    Val half_sum = (n[1] + n[2]) * 0.5;
    return {n[0] + half_sum, (n[1] - n[2]) * 0.5, half_sum + n[3]};
  }
  Val third_sum = (n[1] + n[2]) * (1.0 / 3), third_diff = (n[1] - n[2]) * (1.0 / 3);
  return {n[0] + third_diff + n[3] * (-16.0 / 15) + n[4] * (1.0 / 15), third_sum + n[3] * (-8.0 / 15) + n[4] * (-2.0 / 15),
          third_diff + n[3] * (-4.0 / 15) + n[4] * (4.0 / 15) + n[5]};
}

// A transform X -> T X T^T of a square patch, given T along one axis (f): down each column, then along each row.
Square separable(const Square& x, const std::function<Vec(const Vec&)>& f) {
  const size_t k = x.size();
  std::vector<Vec> cols(k);  // cols[c] = T x[., c]
  for (size_t c = 0; c < k; ++c) {
    Vec col(k);
    for (size_t r = 0; r < k; ++r) col[r] = x[r][c];
    cols[c] = f(col);
  }
  const size_t l = cols[0].size();
  Square out(l);
  for (size_t r = 0; r < l; ++r) {
    Vec row(k);
    for (size_t c = 0; c < k; ++c) row[c] = cols[c][r];
    out[r] = f(row);
  }
  return out;
}

// The alpha x alpha planes of the transformed domain, each `stride` elements after the last: element e of each.
void store_planes(Buf planes, Val e, uint32_t stride, const Square& v) {
  const uint32_t alpha = uint32_t(v.size());
  for (uint32_t r = 0; r < alpha; ++r)
    for (uint32_t c = 0; c < alpha; ++c) planes[e + (r * alpha + c) * stride] = v[r][c];
}
Square load_planes(Buf planes, Val e, uint32_t stride, uint32_t alpha) {
  Square v(alpha, Vec(alpha));
  for (uint32_t r = 0; r < alpha; ++r)
    for (uint32_t c = 0; c < alpha; ++c) v[r][c] = Val(planes[e + (r * alpha + c) * stride]);
  return v;
}

// A kernel of one invocation per element e < count, reading buffer `in` and writing `out` (what all the transforms
// are).
HeavyKernel per_element_kernel(std::string name, Type t, const char* in, const char* out, uint32_t count,
                               const std::function<void(KernelBuilder&, Buf, Buf, Val)>& body) {
  if (count == 0) return empty_result(name);
  KernelBuilder kb(std::move(name), kElementWorkgroup);
  Buf src = kb.buffer(in, t, Access::Read);
  Buf dst = kb.buffer(out, t, Access::Write);
  Val e = kb.global_id();
  kb.if_(e < count, [&] { body(kb, src, dst, e); });
  return {kb.finish(), groups_for_threads(count, kElementWorkgroup)};
}

uint32_t checked_tile(uint32_t tile) {
  if (tile != 2 && tile != 4)
    throw std::invalid_argument(fmt::format("conv2d Winograd: output tiles of 2 or 4 (F(2x2, 3x3), F(4x4, 3x3)), not {}", tile));
  return tile;
}

uint32_t alpha_of(uint32_t tile) { return checked_tile(tile) + 2; }

// F(2x2, 3x3)'s kernels keep their first names; F(4x4, 3x3)'s are "conv2d_winograd4_...".
std::string checked_name(const char* stage, const Conv2dShape& s, Type t, uint32_t tile) {
  if (!conv2d_winograd_applies(s))
    throw std::invalid_argument(fmt::format("conv2d {}: Winograd's F({}x{}, 3x3) takes 3x3 windows at stride 1 without "
                                            "dilation or groups", s.text(), tile, tile));
  const uint32_t alpha = alpha_of(tile);
  index_u32(s.n * s.cin * s.h * s.w, "conv2d input elements");
  index_u32(s.n * s.cout * s.ho * s.wo, "conv2d output elements");
  index_u32(alpha * alpha * std::max(s.cin, s.cout) * conv2d_winograd_tiles(s, tile), "conv2d Winograd transformed elements");
  return fmt::format("conv2d_winograd{}_{}_{}_{}", tile == 2 ? "" : "4", stage, s.text(), float_suffix(t, "conv2d"));
}

// The tile grid of one image.
struct Tiles {
  uint32_t size, across, down, per_image, all;
  Tiles(const Conv2dShape& s, uint32_t tile)
      : size(checked_tile(tile)), across(uint32_t((s.wo + tile - 1) / tile)), down(uint32_t((s.ho + tile - 1) / tile)),
        per_image(across * down), all(uint32_t(conv2d_winograd_tiles(s, tile))) {}
};

// Where element e of a [channels][tiles] plane set lies (or of a [tiles][channels] one: tile_at_channel_fastest): its
// channel, image and the tile's first output row and column.
struct TileAt {
  Val channel, n, row, col;
};
TileAt tile_of(Val channel, Val tile, const Tiles& tiles) {
  Val in_image = tile % tiles.per_image;
  return {channel, tile / tiles.per_image, (in_image / tiles.across) * tiles.size, (in_image % tiles.across) * tiles.size};
}
TileAt tile_at(Val e, const Tiles& tiles) { return tile_of(e / tiles.all, e % tiles.all, tiles); }
TileAt tile_at_channel_fastest(Val e, uint32_t channels, const Tiles& tiles) {
  return tile_of(e % channels, e / channels, tiles);
}

// Whether row r (or column) of a tile can hang over the output's edge `extent`: only in the last row (column) of
// tiles, and only from extent % tile on.
bool may_hang_over(uint32_t r, int64_t extent, uint32_t tile) { return extent % tile != 0 && r >= extent % tile; }

// One [m, k] x [k, n] product per element of the alpha x alpha transformed domain, each operand's planes one after
// another.
MatmulShape domain_products(uint32_t tile, int64_t m, int64_t k, int64_t n) {
  const int64_t planes = int64_t(alpha_of(tile)) * alpha_of(tile);
  MatmulShape g;
  g.m = m, g.k = k, g.n = n;
  g.batch = {planes};
  g.a_batch = {planes};
  g.b_batch = {planes};
  g.a_batch_strides = {m * k};
  g.b_batch_strides = {k * n};
  return g;
}

}  // namespace

bool conv2d_winograd_applies(const Conv2dShape& s) {
  return s.kh == 3 && s.kw == 3 && s.stride_h == 1 && s.stride_w == 1 && s.dil_h == 1 && s.dil_w == 1 && s.groups == 1;
}

bool conv2d_winograd_grad_input_applies(const Conv2dShape& s) {
  return conv2d_winograd_applies(s) && s.pad_h <= 2 && s.pad_w <= 2;
}

Conv2dShape conv2d_winograd_grad_input_shape(const Conv2dShape& s) {
  if (!conv2d_winograd_grad_input_applies(s))
    throw std::invalid_argument(fmt::format("conv2d_grad_input {}: Winograd takes 3x3 windows at stride 1 without "
                                            "dilation or groups, padded by at most 2", s.text()));
  Conv2dShape e = s;
  e.cin = s.cout, e.h = s.ho, e.w = s.wo;
  e.cout = s.cin, e.ho = s.h, e.wo = s.w;
  e.pad_h = 2 - s.pad_h, e.pad_w = 2 - s.pad_w;
  return e;
}

uint32_t conv2d_winograd_planes(uint32_t tile) { return alpha_of(tile) * alpha_of(tile); }

int64_t conv2d_winograd_tiles(const Conv2dShape& s, uint32_t tile) {
  checked_tile(tile);
  return s.n * ((s.ho + tile - 1) / tile) * ((s.wo + tile - 1) / tile);
}

MatmulShape conv2d_winograd_gemm_shape(const Conv2dShape& s, uint32_t tile) {
  return domain_products(tile, s.cout, s.cin, conv2d_winograd_tiles(s, tile));
}

MatmulShape conv2d_winograd_grad_weight_gemm_shape(const Conv2dShape& s, uint32_t tile) {
  return domain_products(tile, s.cin, conv2d_winograd_tiles(s, tile), s.cout);
}

HeavyKernel conv2d_winograd_weight_kernel(const Conv2dShape& s, Type t, uint32_t tile, bool flipped) {
  const uint32_t cout = uint32_t(s.cout), cin = uint32_t(s.cin);
  const uint32_t pairs = cout * cin;  // (co, ci), ci fastest: U's rows are [Cout][Cin]
  return per_element_kernel(checked_name(flipped ? "weights_flipped" : "weights", s, t, tile), t, "w", "u", pairs,
                            [&](KernelBuilder&, Buf w, Buf u, Val e) {
    // Tap (r, c) of the window: w[co, ci, r, c], or flipped w[ci, co, 2 - r, 2 - c] of the original [Cin, Cout] weights.
    Val base = flipped ? ((e % cin) * cout + e / cin) * 9u : e * 9u;
    Square g(3, Vec(3));
    for (uint32_t r = 0; r < 3; ++r)
      for (uint32_t c = 0; c < 3; ++c) g[r][c] = Val(w[base + (flipped ? (2 - r) * 3 + (2 - c) : r * 3 + c)]);
    store_planes(u, e, pairs, separable(g, [tile](const Vec& v) { return weight_1d(v, tile); }));  // G g G^T
  });
}

HeavyKernel conv2d_winograd_input_kernel(const Conv2dShape& s, Type t, uint32_t tile) {
  const Tiles tiles(s, tile);
  const uint32_t alpha = alpha_of(tile);
  const uint32_t cin = uint32_t(s.cin), H = uint32_t(s.h), W = uint32_t(s.w);
  const uint32_t ph = uint32_t(s.pad_h), pw = uint32_t(s.pad_w);
  const uint32_t count = cin * tiles.all;  // (ci, tile), tile fastest: V's rows are [Cin][tiles]
  return per_element_kernel(checked_name("input", s, t, tile), t, "x", "v", count, [&](KernelBuilder& kb, Buf x, Buf v, Val e) {
    const TileAt at = tile_at(e, tiles);
    // The patch's first row and column; before the padding they wrap around as unsigned numbers and fail `< H`.
    Val row0 = at.row - ph, col0 = at.col - pw;
    Val plane = (at.n * cin + at.channel) * (H * W);
    Square d(alpha, Vec(alpha));
    for (uint32_t r = 0; r < alpha; ++r)
      for (uint32_t c = 0; c < alpha; ++c) {
        Val ih = row0 + r, iw = col0 + c;
        d[r][c] = select((ih < H) & (iw < W), Val(x[plane + min(ih, H - 1) * W + min(iw, W - 1)]), kb.constant(t, 0));
      }
    store_planes(v, e, count, separable(d, input_1d));  // B^T d B
  });
}

HeavyKernel conv2d_winograd_output_kernel(const Conv2dShape& s, Type t, uint32_t tile) {
  const Tiles tiles(s, tile);
  const uint32_t cout = uint32_t(s.cout), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  const uint32_t count = cout * tiles.all;  // (co, tile), tile fastest: M's rows are [Cout][tiles]
  return per_element_kernel(checked_name("output", s, t, tile), t, "m", "y", count, [&](KernelBuilder& kb, Buf m, Buf y, Val e) {
    const TileAt place = tile_at(e, tiles);
    Val oh = place.row, ow = place.col;
    const Square ym = separable(load_planes(m, e, count, alpha_of(tile)), output_1d);  // A^T M A
    Val at = ((place.n * cout + place.channel) * Ho + oh) * Wo + ow;
    for (uint32_t r = 0; r < tile; ++r) {
      for (uint32_t c = 0; c < tile; ++c) {
        auto store = [&] { y[at + (r * Wo + c)] = ym[r][c]; };
        std::optional<Val> inside;
        auto also = [&](Val cond) { inside = inside ? (*inside & cond) : cond; };
        if (may_hang_over(r, Ho, tile)) also(oh + r < Ho);
        if (may_hang_over(c, Wo, tile)) also(ow + c < Wo);
        if (inside) kb.if_(*inside, store);
        else store();
      }
    }
  });
}

HeavyKernel conv2d_winograd_grad_y_kernel(const Conv2dShape& s, Type t, uint32_t tile) {
  const Tiles tiles(s, tile);
  const uint32_t cout = uint32_t(s.cout), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  // (tile, co), co fastest: Gy's rows are [tiles][Cout], the product's B as it reads it (K = tiles by rows).
  const uint32_t count = cout * tiles.all;
  return per_element_kernel(checked_name("grad_y", s, t, tile), t, "gy", "g", count, [&](KernelBuilder& kb, Buf gy, Buf g, Val e) {
    const TileAt at = tile_at_channel_fastest(e, cout, tiles);
    Val plane = (at.n * cout + at.channel) * (Ho * Wo);
    Square d(tile, Vec(tile));
    for (uint32_t r = 0; r < tile; ++r)
      for (uint32_t c = 0; c < tile; ++c) {
        // Zeros where the tile hangs over the edge (its index clamped inside).
        Val oh = at.row + r, ow = at.col + c;
        const bool row_over = may_hang_over(r, Ho, tile), col_over = may_hang_over(c, Wo, tile);
        Val v = gy[plane + (row_over ? min(oh, Ho - 1) : oh) * Wo + (col_over ? min(ow, Wo - 1) : ow)];
        std::optional<Val> inside;
        if (row_over) inside = oh < Ho;
        if (col_over) inside = inside ? (*inside & (ow < Wo)) : (ow < Wo);
        d[r][c] = inside ? select(*inside, v, kb.constant(t, 0)) : v;
      }
    store_planes(g, e, count, separable(d, grad_y_1d));  // A gy A^T
  });
}

HeavyKernel conv2d_winograd_grad_weight_kernel(const Conv2dShape& s, Type t, uint32_t tile, uint32_t splits) {
  const uint32_t cout = uint32_t(s.cout), cin = uint32_t(s.cin);
  const uint32_t pairs = cin * cout;  // (ci, co), co fastest: the product's [Cin][Cout] result
  const uint32_t alpha = alpha_of(tile), planes = alpha * alpha;
  if (splits < 1 || splits > 64)
    throw std::invalid_argument(fmt::format("conv2d_grad_weight {}: {} splits of the Winograd product (1..64)", s.text(), splits));
  index_u32(int64_t(splits) * planes * pairs, "conv2d Winograd weight-gradient partial sums");
  std::string name = checked_name("grad_weights", s, t, tile);
  if (splits > 1) name += fmt::format("_s{}", splits);
  return per_element_kernel(std::move(name), t, "n", "grad_w", pairs, [&](KernelBuilder&, Buf n, Buf grad_w, Val e) {
    Square sum = load_planes(n, e, pairs, alpha);
    for (uint32_t split = 1; split < splits; ++split) {  // in split order: the same result on every run
      const Square part = load_planes(n, e + split * planes * pairs, pairs, alpha);
      for (uint32_t r = 0; r < alpha; ++r)
        for (uint32_t c = 0; c < alpha; ++c) sum[r][c] = sum[r][c] + part[r][c];
    }
    const Square g = separable(sum, grad_weight_1d);  // G^T N G
    Val base = ((e % cout) * cin + e / cout) * 9u;  // grad_w[co, ci]
    for (uint32_t r = 0; r < 3; ++r)
      for (uint32_t c = 0; c < 3; ++c) grad_w[base + r * 3 + c] = g[r][c];
  });
}

}  // namespace spire::lowering::heavy
