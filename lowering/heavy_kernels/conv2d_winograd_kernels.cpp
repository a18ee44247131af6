#include "lowering/heavy_kernels/conv2d_winograd_kernels.h"

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

constexpr uint32_t kThreads = 256;

template <size_t N>
using Vec = std::array<Val, N>;
template <size_t N>
using Square = std::array<Vec<N>, N>;  // [row][column]

// B^T d (or d B, applied to a column instead of a row): the input transform along one axis.
Vec<4> input_1d(const Vec<4>& d) { return {d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]}; }

// G g along one axis: 3 taps to 4.
Vec<4> weight_1d(const Vec<3>& g) {
  Val half_sum = (g[0] + g[2]) * 0.5;
  Val half_mid = g[1] * 0.5;
  return {g[0], half_sum + half_mid, half_sum - half_mid, g[2]};
}

// A^T m along one axis: 4 to 2 outputs.
Vec<2> output_1d(const Vec<4>& m) { return {m[0] + m[1] + m[2], m[1] - m[2] - m[3]}; }

// The weight gradient's transforms are the transposes of the forward's output and weight transforms.
// A gy along one axis: 2 gradients to 4.
Vec<4> grad_y_1d(const Vec<2>& g) { return {g[0], g[0] + g[1], g[0] - g[1], g[1] * -1.0}; }

// G^T n along one axis: 4 to the 3 taps.
Vec<3> grad_weight_1d(const Vec<4>& n) {
  Val half_sum = (n[1] + n[2]) * 0.5;
  return {n[0] + half_sum, (n[1] - n[2]) * 0.5, half_sum + n[3]};
}

// A transform X -> T X T^T of a square patch, given T along one axis (f): down each column, then along each row.
template <size_t K, size_t L>
Square<L> separable(const Square<K>& x, Vec<L> (*f)(const Vec<K>&)) {
  std::array<Vec<L>, K> cols;  // cols[c] = T x[., c]
  for (size_t c = 0; c < K; ++c) {
    Vec<K> col;
    for (size_t r = 0; r < K; ++r) col[r] = x[r][c];
    cols[c] = f(col);
  }
  Square<L> out;
  for (size_t r = 0; r < L; ++r) {
    Vec<K> row;
    for (size_t c = 0; c < K; ++c) row[c] = cols[c][r];
    out[r] = f(row);
  }
  return out;
}

// The 16 planes of the transformed domain, each `stride` elements after the last: element e of each.
void store_planes(Buf planes, Val e, uint32_t stride, const Square<4>& v) {
  for (uint32_t r = 0; r < 4; ++r)
    for (uint32_t c = 0; c < 4; ++c) planes[e + (r * 4 + c) * stride] = v[r][c];
}
Square<4> load_planes(Buf planes, Val e, uint32_t stride) {
  Square<4> v;
  for (uint32_t r = 0; r < 4; ++r)
    for (uint32_t c = 0; c < 4; ++c) v[r][c] = Val(planes[e + (r * 4 + c) * stride]);
  return v;
}

// A kernel of one invocation per element e < count, reading buffer `in` and writing `out` (what all three transforms
// are).
HeavyKernel per_element_kernel(std::string name, Type t, const char* in, const char* out, uint32_t count,
                               const std::function<void(KernelBuilder&, Buf, Buf, Val)>& body) {
  if (count == 0) return empty_result(name);
  KernelBuilder kb(std::move(name), kThreads);
  Buf src = kb.buffer(in, t, Access::Read);
  Buf dst = kb.buffer(out, t, Access::Write);
  Val e = kb.global_id();
  kb.if_(e < count, [&] { body(kb, src, dst, e); });
  return {kb.finish(), groups_for_threads(count, kThreads)};
}

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

// Where element e of a [channels][tiles] plane set lies (or of a [tiles][channels] one: tile_at_channel_fastest): its
// channel, image and the tile's first output row and column.
struct TileAt {
  Val channel, n, row, col;
};
TileAt tile_of(Val channel, Val tile, const Tiles& tiles) {
  Val in_image = tile % tiles.per_image;
  return {channel, tile / tiles.per_image, (in_image / tiles.across) * 2u, (in_image % tiles.across) * 2u};
}
TileAt tile_at(Val e, const Tiles& tiles) { return tile_of(e / tiles.all, e % tiles.all, tiles); }
TileAt tile_at_channel_fastest(Val e, uint32_t channels, const Tiles& tiles) {
  return tile_of(e % channels, e / channels, tiles);
}

// One [m, k] x [k, n] product per element of the 4x4 transformed domain, each operand's 16 planes one after another.
MatmulShape sixteen_products(int64_t m, int64_t k, int64_t n) {
  MatmulShape g;
  g.m = m, g.k = k, g.n = n;
  g.batch = {16};
  g.a_batch = {16};
  g.b_batch = {16};
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
  return sixteen_products(s.cout, s.cin, conv2d_winograd_tiles(s));
}

MatmulShape conv2d_winograd_grad_weight_gemm_shape(const Conv2dShape& s) {
  return sixteen_products(s.cin, conv2d_winograd_tiles(s), s.cout);
}

HeavyKernel conv2d_winograd_weight_kernel(const Conv2dShape& s, Type t, bool flipped) {
  const uint32_t cout = uint32_t(s.cout), cin = uint32_t(s.cin);
  const uint32_t pairs = cout * cin;  // (co, ci), ci fastest: U's rows are [Cout][Cin]
  return per_element_kernel(checked_name(flipped ? "weights_flipped" : "weights", s, t), t, "w", "u", pairs,
                            [&](KernelBuilder&, Buf w, Buf u, Val e) {
    // Tap (r, c) of the window: w[co, ci, r, c], or flipped w[ci, co, 2 - r, 2 - c] of the original [Cin, Cout] weights.
    Val base = flipped ? ((e % cin) * cout + e / cin) * 9u : e * 9u;
    Square<3> g;
    for (uint32_t r = 0; r < 3; ++r)
      for (uint32_t c = 0; c < 3; ++c) g[r][c] = Val(w[base + (flipped ? (2 - r) * 3 + (2 - c) : r * 3 + c)]);
    store_planes(u, e, pairs, separable(g, weight_1d));  // G g G^T
  });
}

HeavyKernel conv2d_winograd_input_kernel(const Conv2dShape& s, Type t) {
  const Tiles tiles(s);
  const uint32_t cin = uint32_t(s.cin), H = uint32_t(s.h), W = uint32_t(s.w);
  const uint32_t ph = uint32_t(s.pad_h), pw = uint32_t(s.pad_w);
  const uint32_t count = cin * tiles.all;  // (ci, tile), tile fastest: V's rows are [Cin][tiles]
  return per_element_kernel(checked_name("input", s, t), t, "x", "v", count, [&](KernelBuilder& kb, Buf x, Buf v, Val e) {
    const TileAt at = tile_at(e, tiles);
    // The patch's first row and column; before the padding they wrap around as unsigned numbers and fail `< H`.
    Val row0 = at.row - ph, col0 = at.col - pw;
    Val plane = (at.n * cin + at.channel) * (H * W);
    Square<4> d;
    for (uint32_t r = 0; r < 4; ++r)
      for (uint32_t c = 0; c < 4; ++c) {
        Val ih = row0 + r, iw = col0 + c;
        d[r][c] = select((ih < H) & (iw < W), Val(x[plane + min(ih, H - 1) * W + min(iw, W - 1)]), kb.constant(t, 0));
      }
    store_planes(v, e, count, separable(d, input_1d));  // B^T d B
  });
}

HeavyKernel conv2d_winograd_output_kernel(const Conv2dShape& s, Type t) {
  const Tiles tiles(s);
  const uint32_t cout = uint32_t(s.cout), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  const uint32_t count = cout * tiles.all;  // (co, tile), tile fastest: M's rows are [Cout][tiles]
  return per_element_kernel(checked_name("output", s, t), t, "m", "y", count, [&](KernelBuilder& kb, Buf m, Buf y, Val e) {
    const TileAt place = tile_at(e, tiles);
    Val oh = place.row, ow = place.col;
    const Square<2> ym = separable(load_planes(m, e, count), output_1d);  // A^T M A
    Val at = ((place.n * cout + place.channel) * Ho + oh) * Wo + ow;
    for (uint32_t r = 0; r < 2; ++r) {
      for (uint32_t c = 0; c < 2; ++c) {
        // Only the bottom row and right column of tiles can hang over an odd edge.
        auto store = [&] { y[at + (r * Wo + c)] = ym[r][c]; };
        std::optional<Val> inside;
        auto also = [&](Val cond) { inside = inside ? (*inside & cond) : cond; };
        if (r == 1 && Ho % 2) also(oh + 1u < Ho);
        if (c == 1 && Wo % 2) also(ow + 1u < Wo);
        if (inside) kb.if_(*inside, store);
        else store();
      }
    }
  });
}

HeavyKernel conv2d_winograd_grad_y_kernel(const Conv2dShape& s, Type t) {
  const Tiles tiles(s);
  const uint32_t cout = uint32_t(s.cout), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  // (tile, co), co fastest: Gy's rows are [tiles][Cout], the product's B as it reads it (K = tiles by rows).
  const uint32_t count = cout * tiles.all;
  return per_element_kernel(checked_name("grad_y", s, t), t, "gy", "g", count, [&](KernelBuilder& kb, Buf gy, Buf g, Val e) {
    const TileAt at = tile_at_channel_fastest(e, cout, tiles);
    Val plane = (at.n * cout + at.channel) * (Ho * Wo);
    Square<2> d;
    for (uint32_t r = 0; r < 2; ++r)
      for (uint32_t c = 0; c < 2; ++c) {
        // Only the bottom row and right column of tiles can hang over an odd edge: zeros there.
        Val oh = at.row + r, ow = at.col + c;
        Val v = gy[plane + (r == 1 && Ho % 2 ? min(oh, Ho - 1) : oh) * Wo + (c == 1 && Wo % 2 ? min(ow, Wo - 1) : ow)];
        std::optional<Val> inside;
        if (r == 1 && Ho % 2) inside = oh < Ho;
        if (c == 1 && Wo % 2) inside = inside ? (*inside & (ow < Wo)) : (ow < Wo);
        d[r][c] = inside ? select(*inside, v, kb.constant(t, 0)) : v;
      }
    store_planes(g, e, count, separable(d, grad_y_1d));  // A gy A^T
  });
}

HeavyKernel conv2d_winograd_grad_weight_kernel(const Conv2dShape& s, Type t, uint32_t splits) {
  const uint32_t cout = uint32_t(s.cout), cin = uint32_t(s.cin);
  const uint32_t pairs = cin * cout;  // (ci, co), co fastest: the product's [Cin][Cout] result
  if (splits < 1 || splits > 64)
    throw std::invalid_argument(fmt::format("conv2d_grad_weight {}: {} splits of the Winograd product (1..64)", s.text(), splits));
  index_u32(int64_t(splits) * 16 * pairs, "conv2d Winograd weight-gradient partial sums");
  std::string name = checked_name("grad_weights", s, t);
  if (splits > 1) name += fmt::format("_s{}", splits);
  return per_element_kernel(std::move(name), t, "n", "grad_w", pairs, [&](KernelBuilder&, Buf n, Buf grad_w, Val e) {
    Square<4> sum = load_planes(n, e, pairs);
    for (uint32_t split = 1; split < splits; ++split) {  // in split order: the same result on every run
      const Square<4> part = load_planes(n, e + split * 16 * pairs, pairs);
      for (uint32_t r = 0; r < 4; ++r)
        for (uint32_t c = 0; c < 4; ++c) sum[r][c] = sum[r][c] + part[r][c];
    }
    const Square<3> g = separable(sum, grad_weight_1d);  // G^T N G
    Val base = ((e % cout) * cin + e / cout) * 9u;  // grad_w[co, ci]
    for (uint32_t r = 0; r < 3; ++r)
      for (uint32_t c = 0; c < 3; ++c) grad_w[base + r * 3 + c] = g[r][c];
  });
}

}  // namespace spire::lowering::heavy
