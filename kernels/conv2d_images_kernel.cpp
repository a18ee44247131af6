#include "kernels/conv2d_images_kernel.h"

#include "kernels/pooled_side_output.h"
#include "kernels/staged_copy.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

namespace {

uint32_t images_per_workgroup(const Conv2dShape& s, const Conv2dConfig& c) {
  return c.wg / std::max<uint32_t>(1, conv2d_images_owners(s, c.c_block));
}

}  // namespace

uint32_t conv2d_images_owners(const Conv2dShape& s, uint32_t c_block) {
  return uint32_t(s.cout / std::max<uint32_t>(c_block, 1) * s.ho);
}

uint64_t conv2d_images_elements(const Conv2dShape& s, uint32_t images) {
  return uint64_t(s.cout * s.cin * s.kh * s.kw) +
         uint64_t(images) * uint64_t(s.cin * (s.h + 2 * s.pad_h) * (s.w + 2 * s.pad_w));
}

void check_conv2d_images(const Conv2dShape& s, Type t, const Conv2dConfig& c, const Limits& limits) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("conv2d: config '{}' {}", c.config().text(), why));
  };
  if (const std::string why = staged_rows_refusal(s); !why.empty()) fail("stages whole images, which " + why);
  if (!c.rows || c.shared_w || c.pixels != 1) fail("stages whole images: rows=1, without shared_w or pixels");
  if (c.c_block < 1 || s.cout % c.c_block != 0 || c.c_block * s.wo > kMaxSums)
    fail(fmt::format("needs a c_block dividing the {} output channels with at most {} sums per invocation", s.cout,
                     kMaxSums));
  const uint32_t owners = conv2d_images_owners(s, c.c_block);
  if (c.wg < owners || c.wg > std::min<uint32_t>(1024, limits.max_invocations))
    fail(fmt::format("needs a workgroup of at least an image's {} invocations, within the device's {}", owners,
                     std::min<uint32_t>(1024, limits.max_invocations)));
  const uint64_t bytes = conv2d_images_elements(s, images_per_workgroup(s, c)) * dtype_bytes(t);
  if (bytes > std::max<uint64_t>(limits.shared_bytes, kMinSharedBytes))
    fail(fmt::format("stages {} bytes of weights and images in workgroup memory, more than the device has", bytes));
}

namespace {

// The kernel for the forward shape `s`; `flipped`: the weights buffer holds [cin][cout][kh][kw] of the convolution whose
// input gradient this is, staged as this shape's [cout][cin][kh][kw] with the window turned around (the input
// gradient of a stride-1 convolution is the forward pass of grad_y with those weights, padded by kh - 1 - pad).
HeavyKernel images_kernel(const Conv2dShape& s, Type t, const Conv2dConfig& c, bool flipped, const std::string& op,
                          const std::string& op_shape, const char* in_name, const char* out_name,
                          const PooledOutputs* pool = nullptr, const Limits& limits = {}) {
  const uint32_t N = index_u32(s.n, "conv2d images"), H = uint32_t(s.h), W = uint32_t(s.w);
  const uint32_t Ho = uint32_t(s.ho), Wo = uint32_t(s.wo), KH = uint32_t(s.kh), KW = uint32_t(s.kw);
  const uint32_t Cin = uint32_t(s.cin), Cout = uint32_t(s.cout), cob = c.c_block;
  const uint32_t wg = pool ? pooled_workgroup(c.wg, limits) : c.wg;
  const uint32_t Hp = H + 2 * uint32_t(s.pad_h), Wp = W + 2 * uint32_t(s.pad_w);
  index_u32(s.n * s.cout * s.ho * s.wo, "conv2d output elements");
  index_u32(s.n * s.cin * s.h * s.w, "conv2d input elements");
  const uint32_t owners = conv2d_images_owners(s, cob), images = images_per_workgroup(s, c);
  const uint32_t window = Cin * KH * KW, weights = Cout * window, padded_plane = Hp * Wp;
  const uint32_t padded_image = Cin * padded_plane, x_image = Cin * H * W;
  const uint32_t staged = images * padded_image;  // padded input elements per workgroup
  const uint64_t groups = (N + images - 1) / images;

  std::string name = op + "_" + op_shape + "_" + float_suffix(t, op) +
                     fmt::format("_images_wg{}_c{}{}{}", c.wg, cob, c.row_loop ? "_rl" : "",
                                 c.per_core > 0 ? fmt::format("_pc{}", c.per_core) : "") +
                     (pool ? pool->suffix() : "");
  KernelBuilder kb(name, wg);
  if (c.per_core > 0) kb.request_workgroups_per_core(c.per_core);
  Buf x = kb.buffer(in_name, t, Access::Read);
  Buf w = kb.buffer("w", t, Access::Read);
  Buf y = kb.buffer(out_name, t, Access::Write);
  Shared sh = kb.shared("weights_and_images", t, uint32_t(conv2d_images_elements(s, images)));
  Val lid = kb.local_id();
  Val first = kb.group_id() * images;  // the workgroup's first image
  // The weights, then each padded input element (zero outside the image, and for images past N, which read the last
  // one's elements: a clamped load and a select, no branch).
  StagedRange weight_range{weights, [&](Val at) -> std::pair<Val, Val> {
    Val from = at;
    if (flipped) {  // at = [co][ci][r][col] of this shape; the buffer holds [ci][co][kh - 1 - r][kw - 1 - col]
      Val co = at / window, ci = (at / (KH * KW)) % Cin, r = (at / KW) % KH, col = at % KW;
      from = ((ci * Cout + co) * KH + (KH - 1 - r)) * KW + (KW - 1 - col);
    }
    return {at, w[from]};
  }};
  StagedRange image_range{staged, [&](Val at) -> std::pair<Val, Val> {
    Val im = at / padded_image, rest = at % padded_image;
    Val ch = rest / padded_plane, hw = rest % padded_plane;
    Val hi = cast(hw / Wp, Type::I32) - int32_t(s.pad_h), wi = cast(hw % Wp, Type::I32) - int32_t(s.pad_w);
    Val n = first + im;
    Val inside = (hi >= 0) & (hi < int32_t(H)) & (wi >= 0) & (wi < int32_t(W)) & (n < N);
    Val from = min(n, N - 1) * x_image + ch * (H * W) + clamped_index(hi, H) * W + clamped_index(wi, W);
    return {weights + at, select(inside, Val(x[from]), kb.constant(t, 0))};
  }};
  stage_ranges(kb, sh, lid, wg, {weight_range, image_range});
  kb.barrier();
  // Invocation lid: image lid / owners, output channels co0 .. co0 + cob - 1, output row ho.
  Val im = lid / owners, o = lid % owners;
  Val n = first + im, co0 = (o / Ho) * cob, ho = o % Ho;
  Val valid = (lid < images * owners) & (n < N);
  std::vector<Var> acc;  // acc[b * Wo + column]; declared for every invocation: a pooled output reads them after
  for (uint32_t i = 0; i < cob * Wo; ++i) acc.push_back(kb.var(fmt::format("acc{}", i), kb.constant(t, 0)));
  kb.if_(valid, [&] {
    Val image_at = weights + im * padded_image;
    // One window row of one input channel: its input row and c_block x kw weights serve c_block x kw x wo products.
    auto window_row = [&](Val row_at, Val w_at) {
      std::vector<Val> xv;
      for (uint32_t j = 0; j < Wo + KW - 1; ++j) xv.push_back(sh[row_at + j]);
      for (uint32_t b = 0; b < cob; ++b)
        for (uint32_t col = 0; col < KW; ++col) {
          Val wv = sh[w_at + (b * window + col)];
          for (uint32_t j = 0; j < Wo; ++j) acc[b * Wo + j] = fma(xv[j + col], wv, acc[b * Wo + j]);
        }
    };
    kb.for_(kb.u32(0), kb.u32(Cin), [&](Val ci) {
      Val plane_at = image_at + ci * padded_plane + ho * Wp;
      Val w_at = co0 * window + ci * (KH * KW);
      // Unrolled, the compilers load every row's values up front (c_block 4: 244 registers on cuda:0); row_loop keeps
      // one row's in registers.
      if (c.row_loop) kb.for_(kb.u32(0), kb.u32(KH), [&](Val r) { window_row(plane_at + r * Wp, w_at + r * KW); });
      else
        for (uint32_t r = 0; r < KH; ++r) window_row(plane_at + r * Wp, w_at + r * KW);
    });
    Val y_row = ((n * Cout + co0) * Ho + ho) * Wo;
    for (uint32_t b = 0; b < cob; ++b)
      for (uint32_t j = 0; j < Wo; ++j) {
        Val at = y_row + (b * Ho * Wo + j);
        // A pooling takes what is stored: the value the epilogue (if the lowering folds one in) makes of the sum.
        if (pool) acc[b * Wo + j] = kb.epilogue_tap(y, at, acc[b * Wo + j].get());
        if (!pool || pool->result) y[at] = acc[b * Wo + j].get();
      }
  });
  if (pool) {
    // Rows ho and ho + 1 of a channel block are local ids lid and lid + 1 (owners = blocks x Ho, Ho even).
    const PooledBuffers out = declare_pooled_buffers(kb, *pool, t);
    std::vector<WindowHalf> halves;  // [block][window column]
    for (uint32_t b = 0; b < cob; ++b)
      for (uint32_t j = 0; j < Wo; j += 2) halves.push_back({acc[b * Wo + j].get(), acc[b * Wo + j + 1].get()});
    Val window_row = ((n * Cout + co0) * (Ho / 2) + ho / 2) * (Wo / 2);
    store_pair_maxima(
        kb, PairStores::Selected, PairHalves::Rows, lid, valid, halves,
        [&](uint32_t k) { return window_row + ((k / (Wo / 2)) * (Ho / 2) * (Wo / 2) + k % (Wo / 2)); }, out);
  }
  return {kb.finish(), groups};
}

// The forward shape whose pass over grad_y is the input gradient of `s` (stride 1, dilation 1, one group).
Conv2dShape grad_input_as_forward(const Conv2dShape& s) {
  Conv2dShape f = s;
  f.cin = s.cout, f.h = s.ho, f.w = s.wo;
  f.cout = s.cin, f.ho = s.h, f.wo = s.w;
  f.pad_h = s.kh - 1 - s.pad_h, f.pad_w = s.kw - 1 - s.pad_w;
  return f;
}

void check_grad_input(const Conv2dShape& s, const Conv2dConfig& c) {
  if (!s.dense_unit_stride() || s.pad_h >= s.kh || s.pad_w >= s.kw)
    throw std::invalid_argument(fmt::format("conv2d_grad_input: config '{}' stages whole images, which needs stride 1, "
                                            "dilation 1, one group and padding within the window",
                                            c.config().text()));
}

}  // namespace

HeavyKernel conv2d_images_kernel(const Conv2dShape& s, Type t, const Conv2dConfig& c, const Limits& limits,
                                 const PooledOutputs* pool) {
  check_conv2d_images(s, t, c, limits);
  return images_kernel(s, t, c, false, "conv2d", s.text(), "x", "y", pool, limits);
}

void check_conv2d_grad_input_images(const Conv2dShape& s, Type t, const Conv2dConfig& c, const Limits& limits) {
  check_grad_input(s, c);
  check_conv2d_images(grad_input_as_forward(s), t, c, limits);
}

uint32_t conv2d_grad_input_images_owners(const Conv2dShape& s, uint32_t c_block) {
  return conv2d_images_owners(grad_input_as_forward(s), c_block);
}

HeavyKernel conv2d_grad_input_images_kernel(const Conv2dShape& s, Type t, const Conv2dConfig& c, const Limits& limits) {
  check_conv2d_grad_input_images(s, t, c, limits);
  return images_kernel(grad_input_as_forward(s), t, c, true, "conv2d_grad_input", s.text(), "grad_y", "grad_x");
}

}  // namespace spire::lowering::heavy
