#include "kernels/conv2d_image_strips_kernel.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/pooled_side_output.h"
#include "kernels/staged_copy.h"

namespace spire::lowering::heavy {

using namespace kir;

namespace {

uint32_t channels_in_fours(int64_t cout) { return uint32_t((cout + 3) / 4 * 4); }

// The geometry of one workgroup's staged images.
struct Strips {
  uint32_t strips = 0, owners = 0, images = 0;  // per image: strips of `pixels` rows, owners = strips x wo
  uint32_t rows = 0, ld = 0;                    // a staged plane: rows x ld, rows covering every strip's window
  uint32_t weights = 0, plane = 0, image = 0;   // elements: the weights, a plane, an image's planes
};

Strips strips_of(const Conv2dShape& s, const Conv2dConfig& c) {
  Strips g;
  const uint32_t p = std::max<uint32_t>(c.pixels, 1);
  g.strips = uint32_t((s.ho + p - 1) / p);
  g.owners = g.strips * uint32_t(s.wo);
  g.images = g.owners ? c.wg / g.owners : 0;
  g.rows = g.strips * p + uint32_t(s.kh) - 1;
  g.weights = uint32_t(s.cin * s.kh * s.kw) * channels_in_fours(s.cout);
  // Rows padded so that a subgroup spanning two strips (or two images) reads distinct banks.
  const uint32_t wo = uint32_t(s.wo), images = g.images, owners = g.owners, rows = g.rows, cin = uint32_t(s.cin);
  g.ld = bank_friendly_stride(uint32_t(s.w + 2 * s.pad_w), std::min(c.wg, images * owners), [&](uint32_t lane, uint32_t ld) {
    const uint32_t im = lane / owners, o = lane % owners;
    return im * cin * rows * ld + (o / wo) * p * ld + o % wo;
  });
  g.plane = g.rows * g.ld;
  g.image = uint32_t(s.cin) * g.plane;
  return g;
}

}  // namespace

uint32_t conv2d_image_strips_owners(const Conv2dShape& s, uint32_t pixels) {
  const int64_t p = std::max<uint32_t>(pixels, 1);
  return uint32_t((s.ho + p - 1) / p * s.wo);
}

uint64_t conv2d_image_strips_elements(const Conv2dShape& s, const Conv2dConfig& c) {
  const Strips g = strips_of(s, c);
  return uint64_t(g.weights) + uint64_t(g.images) * g.image;
}

void check_conv2d_image_strips(const Conv2dShape& s, Type t, const Conv2dConfig& c, const Limits& limits) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("conv2d: config '{}' {}", c.config().text(), why));
  };
  if (!s.dense_unit_stride())
    fail("stages whole images, which needs stride 1, dilation 1 and one group");
  if (c.rows || c.shared_w || c.row_loop) fail("stages whole images in strips of elements: rows=0, without shared_w");
  if (c.c_block != s.cout || s.cout * c.pixels > kMaxSums)
    fail(fmt::format("takes strips of elements of all {} output channels (c_block {}), at most {} sums per invocation",
                     s.cout, s.cout, kMaxSums));
  const uint32_t owners = conv2d_image_strips_owners(s, c.pixels);
  if (c.wg < owners || c.wg > std::min<uint32_t>(1024, limits.max_invocations))
    fail(fmt::format("needs a workgroup of at least an image's {} invocations, within the device's {}", owners,
                     std::min<uint32_t>(1024, limits.max_invocations)));
  const uint64_t bytes = conv2d_image_strips_elements(s, c) * dtype_bytes(t);
  if (bytes > std::max<uint64_t>(limits.shared_bytes, kMinSharedBytes))
    fail(fmt::format("stages {} bytes of weights and images in workgroup memory, more than the device has", bytes));
}

HeavyKernel conv2d_image_strips_kernel(const Conv2dShape& s, Type t, const Conv2dConfig& c, const Limits& limits,
                                       const PooledOutputs* pool) {
  check_conv2d_image_strips(s, t, c, limits);
  const uint32_t N = index_u32(s.n, "conv2d image strips"), H = uint32_t(s.h), W = uint32_t(s.w);
  const uint32_t Ho = uint32_t(s.ho), Wo = uint32_t(s.wo), KH = uint32_t(s.kh), KW = uint32_t(s.kw);
  const uint32_t Cin = uint32_t(s.cin), Cout = uint32_t(s.cout), P = c.pixels;
  const uint32_t wg = pool ? pooled_workgroup(c.wg, limits) : c.wg;
  index_u32(s.n * s.cout * s.ho * s.wo, "conv2d output elements");
  index_u32(s.n * s.cin * s.h * s.w, "conv2d input elements");
  const Strips g = strips_of(s, c);
  const uint32_t cpad = channels_in_fours(s.cout), window = Cin * KH * KW, x_image = Cin * H * W;
  const uint32_t staged = g.images * g.image;
  const uint64_t groups = (N + g.images - 1) / g.images;

  std::string name = "conv2d_" + s.text() + "_" + float_suffix(t, "conv2d") +
                     fmt::format("_strips_wg{}_px{}{}", c.wg, P, c.per_core > 0 ? fmt::format("_pc{}", c.per_core) : "") +
                     (pool ? pool->suffix() : "");
  KernelBuilder kb(name, wg);
  if (c.per_core > 0) kb.request_workgroups_per_core(c.per_core);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf w = kb.buffer("w", t, Access::Read);
  Buf y = kb.buffer("y", t, Access::Write);
  Shared sh = kb.shared("weights_and_images", t, uint32_t(g.weights + staged));
  Val lid = kb.local_id();
  Val first = kb.group_id() * g.images;  // the workgroup's first image
  // The weights as [ci][r][col][channels in fours] (the lanes past Cout are zeros and never used), then each padded
  // input element (zero outside the image, in the rows below the last strip's window, the columns past the padding,
  // and for images past N, which read the last one's elements: a clamped load and a select, no branch).
  StagedRange weight_range{g.weights, [&](Val at) -> std::pair<Val, Val> {
    Val tap = at / cpad, co = at % cpad;
    Val from = min(co, Cout - 1) * window + tap;
    return {at, select(co < Cout, Val(w[from]), kb.constant(t, 0))};
  }};
  StagedRange image_range{staged, [&](Val at) -> std::pair<Val, Val> {
    Val im = at / g.image, rest = at % g.image;
    Val ch = rest / g.plane, hw = rest % g.plane;
    Val hi = cast(hw / g.ld, Type::I32) - int32_t(s.pad_h), wi = cast(hw % g.ld, Type::I32) - int32_t(s.pad_w);
    Val n = first + im;
    Val inside = (hi >= 0) & (hi < int32_t(H)) & (wi >= 0) & (wi < int32_t(W)) & (n < N);
    Val from = min(n, N - 1) * x_image + ch * (H * W) + clamped_index(hi, H) * W + clamped_index(wi, W);
    return {g.weights + at, select(inside, Val(x[from]), kb.constant(t, 0))};
  }};
  stage_ranges(kb, sh, lid, wg, {weight_range, image_range});
  kb.barrier();
  // Invocation lid: image lid / owners, strip (its first output row) and column.
  Val im = lid / g.owners, o = lid % g.owners;
  Val n = first + im, row0 = (o / Wo) * P, col = o % Wo;
  const bool vectors = dtype_bytes(t) == 4;
  Val valid = (lid < g.images * g.owners) & (n < N);
  std::vector<Var> acc;  // acc[co * P + i]: output row row0 + i of channel co (a pooled output reads them after)
  for (uint32_t i = 0; i < Cout * P; ++i) acc.push_back(kb.var(fmt::format("acc{}", i), kb.constant(t, 0)));
  kb.if_(valid, [&] {
    Val column_at = g.weights + im * g.image + row0 * g.ld + col;
    kb.for_(kb.u32(0), kb.u32(Cin), [&](Val ci) {
      for (uint32_t kc = 0; kc < KW; ++kc) {
        // The strip's input column under window column kc: P + KH - 1 values serve KH x P products per channel.
        Val at = column_at + ci * g.plane + kc;
        std::vector<Val> xv;
        for (uint32_t r = 0; r < P + KH - 1; ++r) xv.push_back(sh[at + r * g.ld]);
        for (uint32_t r = 0; r < KH; ++r) {
          Val w_at = (ci * (KH * KW) + (r * KW + kc)) * cpad;
          for (uint32_t q = 0; q < cpad; q += 4) {
            std::vector<Val> wv;
            if (vectors) wv = sh.load_vector(w_at + q, 4);
            else
              for (uint32_t l = 0; l < 4; ++l) wv.push_back(sh[w_at + (q + l)]);
            for (uint32_t l = 0; l < 4 && q + l < Cout; ++l)
              for (uint32_t i = 0; i < P; ++i) acc[(q + l) * P + i] = fma(xv[i + r], wv[l], acc[(q + l) * P + i]);
          }
        }
      }
    });
    Val y_at = (n * Cout * Ho + row0) * Wo + col;
    for (uint32_t co = 0; co < Cout; ++co)
      for (uint32_t i = 0; i < P; ++i) {
        auto store = [&] {
          Val at = y_at + (co * Ho + i) * Wo;
          // A pooling takes what is stored: the value the epilogue (if the lowering folds one in) makes of the sum.
          if (pool) acc[co * P + i] = kb.epilogue_tap(y, at, acc[co * P + i].get());
          if (!pool || pool->result) y[at] = acc[co * P + i].get();
        };
        if (g.strips * P > Ho) kb.if_(row0 + i < Ho, store);  // the last strip reaches past the output
        else store();
      }
  });
  if (pool) {
    // Columns col and col + 1 of a strip are local ids lid and lid + 1 (owners = strips x Wo, Wo even); each
    // invocation holds the window rows' two halves of its column.
    const PooledBuffers out = declare_pooled_buffers(kb, *pool, t);
    std::vector<WindowHalf> halves;  // [channel][window row of the strip]: the column's two rows
    for (uint32_t co = 0; co < Cout; ++co)
      for (uint32_t i = 0; i < P; i += 2) halves.push_back({acc[co * P + i].get(), acc[co * P + i + 1].get()});
    const uint32_t Hp = Ho / 2, Wp = Wo / 2;
    Val p_at = (n * Cout * Hp + row0 / 2) * Wp + col / 2;
    // The last strip may reach past the result: its windows' rows past Ho / 2 are not stored.
    std::function<Val(uint32_t)> exists;
    if (g.strips * P > Ho) exists = [&](uint32_t k) { return row0 / 2 + k % (P / 2) < Hp; };
    store_pair_maxima(
        kb, PairStores::Selected, PairHalves::Columns, lid, valid, halves,
        [&](uint32_t k) { return p_at + ((k / (P / 2)) * Hp + k % (P / 2)) * Wp; }, out, exists);
  }
  return {kb.finish(), groups};
}

}  // namespace spire::lowering::heavy
