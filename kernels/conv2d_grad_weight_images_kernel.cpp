#include "kernels/conv2d_grad_weight_images_kernel.h"

#include "kernels/staged_copy.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

uint32_t grad_weight_images_owners(const Conv2dShape& s, uint32_t co_block) {
  return uint32_t(s.cout / std::max<uint32_t>(co_block, 1) * s.cin * s.kh);
}

namespace {

// Where the staged image lies in workgroup memory: grad_y's planes (rows gy_ld apart), then the padded input planes
// (rows x_ld apart), the strides padded so that one read of the invocations' rows touches distinct banks.
struct StagedImage {
  uint32_t gy_ld = 0, gy_plane = 0, x_at = 0, x_ld = 0, x_plane = 0, elements = 0;
  uint32_t sums_at_end = 0;  // the row groups' sums (owners x row_split x co_block x kw), 0 without row_split
};

StagedImage staged_image(const Conv2dShape& s, const GradWeightConfig& c) {
  const uint32_t Ho = uint32_t(s.ho), Wo = uint32_t(s.wo), KH = uint32_t(s.kh), Cin = uint32_t(s.cin);
  const uint32_t cob = std::max<uint32_t>(c.co_block, 1), rs = std::max<uint32_t>(c.row_split, 1);
  const uint32_t lanes = std::min(c.wg, grad_weight_images_owners(s, cob) * rs);
  const uint32_t Hp = uint32_t(s.h + 2 * s.pad_h);
  // Invocation lane: row group lane % rs of owner lane / rs = (output-channel block, input channel, window row);
  // first output row (the row group's), first column.
  StagedImage m;
  m.gy_ld = bank_friendly_stride(Wo, lanes, [&](uint32_t lane, uint32_t ld) {
    const uint32_t owner = lane / rs, k0 = (owner / (Cin * KH)) * cob;
    return k0 * Ho * ld + (lane % rs) * ld;
  });
  m.gy_plane = Ho * m.gy_ld;
  m.x_at = uint32_t(s.cout) * m.gy_plane;
  m.x_ld = bank_friendly_stride(uint32_t(s.w + 2 * s.pad_w), lanes, [&](uint32_t lane, uint32_t ld) {
    const uint32_t owner = lane / rs, ci = (owner / KH) % Cin, r = owner % KH;
    return ci * Hp * ld + (lane % rs + r) * ld;
  });
  m.x_plane = Hp * m.x_ld;
  m.elements = m.x_at + Cin * m.x_plane;
  if (rs > 1) m.sums_at_end = grad_weight_images_owners(s, cob) * rs * cob * uint32_t(s.kw);
  return m;
}

}  // namespace

uint64_t grad_weight_images_elements(const Conv2dShape& s, const GradWeightConfig& c) {
  const StagedImage m = staged_image(s, c);
  return std::max(m.elements, m.sums_at_end);
}

void check_grad_weight_images(const Conv2dShape& s, Type t, const GradWeightConfig& c, const Limits& limits) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("conv2d_grad_weight: config '{}' {}", c.config().text(), why));
  };
  if (const std::string why = staged_rows_refusal(s); !why.empty())
    fail("keeps every weight in one workgroup and stages whole images, which " + why);
  if (!c.row_mode || c.staged || c.block_rows != s.kh || c.block_cols != s.kw)
    fail("keeps every weight in one workgroup: row_mode=1, the whole window as the block, not staged");
  if (c.co_block < 1 || s.cout % c.co_block != 0 || c.co_block * s.kw > kMaxSums)
    fail(fmt::format("needs a co_block dividing the {} output channels with at most {} sums per invocation", s.cout,
                     kMaxSums));
  if (c.row_split < 1 || c.row_split > std::max<int64_t>(s.ho, 1))
    fail(fmt::format("splits the {} output rows among {} invocations (1..{})", s.ho, c.row_split, s.ho));
  const uint32_t owners = grad_weight_images_owners(s, c.co_block);
  if (c.row_split == 1 && (c.wg < owners || c.wg > 1024 || (c.wg & (c.wg - 1)) != 0))
    fail(fmt::format("needs a power-of-two workgroup of at least its {} invocations that own sums", owners));
  if (c.row_split > 1 && (c.wg < owners * c.row_split || c.wg > 1024))
    fail(fmt::format("needs a workgroup of at least its {} invocations that own sums times {} row groups", owners,
                     c.row_split));
  if (c.wg > limits.max_invocations) fail(fmt::format("needs {} invocations, beyond the device's {}", c.wg, limits.max_invocations));
  if (c.splits < 1 || c.splits > kMaxStagedSplits || c.splits > std::max<int64_t>(s.n, 1))
    fail(fmt::format("has {} splits of the {} images (1..{})", c.splits, s.n, kMaxStagedSplits));
  const uint64_t bytes = grad_weight_images_elements(s, c) * dtype_bytes(t);
  if (bytes > std::max<uint64_t>(limits.shared_bytes, kMinSharedBytes))
    fail(fmt::format("stages {} bytes of an image in workgroup memory, more than the device has", bytes));
}

HeavyKernel conv2d_grad_weight_images_kernel(const Conv2dShape& s, Type t, const GradWeightConfig& c,
                                             const Limits& limits, const PooledGradOut* pooled) {
  check_grad_weight_images(s, t, c, limits);
  if (pooled && (pooled->pool.n != s.n || pooled->pool.c != s.cout || pooled->pool.h != s.ho || pooled->pool.w != s.wo ||
                 !pool2d_windows_tile(pooled->pool)))
    throw std::invalid_argument(fmt::format("conv2d_grad_weight: grad_y from a pooling over {} needs windows that tile "
                                            "grad_y's [{}, {}, {}, {}]", pooled->pool.text(), s.n, s.cout, s.ho, s.wo));
  const bool bias = pooled && pooled->bias_sums;
  if (bias && !pooled->positions)
    throw std::invalid_argument("conv2d_grad_weight: the bias gradient is summed from the windows' positions only");
  const uint32_t N = index_u32(s.n, "conv2d_grad_weight images"), H = uint32_t(s.h), W = uint32_t(s.w);
  const uint32_t Ho = uint32_t(s.ho), Wo = uint32_t(s.wo), KH = uint32_t(s.kh), KW = uint32_t(s.kw);
  const uint32_t Cin = uint32_t(s.cin), Cout = uint32_t(s.cout), cob = c.co_block, wg = c.wg, splits = c.splits;
  const uint32_t rs = c.row_split, sums = cob * KW;
  const uint32_t weights = Cout * Cin * KH * KW, owners = grad_weight_images_owners(s, cob);
  const uint32_t stride = weights + (bias ? Cout : 0);  // a split's partial sums: its weights', then its bias's
  index_u32(int64_t(stride) * splits, "conv2d_grad_weight partial sums");
  index_u32(s.n * s.cout * s.ho * s.wo, "conv2d_grad_weight grad_y elements");
  index_u32(s.n * s.cin * s.h * s.w, "conv2d_grad_weight input elements");
  const StagedImage m = staged_image(s, c);
  const uint32_t plane = Ho * Wo, gy_image = Cout * plane, x_image = Cin * H * W;
  const uint32_t chunk = (N + splits - 1) / splits;  // images per split

  std::string name = "conv2d_grad_weight_" + s.text() + "_" + float_suffix(t, "conv2d_grad_weight") +
                     fmt::format("_wg{}_s{}_all_pairs_co{}{}{}", wg, splits, cob,
                                 rs > 1 ? fmt::format("_rs{}", rs) : "",
                                 c.per_core > 0 ? fmt::format("_pc{}", c.per_core) : "") +
                     (pooled ? fmt::format("_pooled_k{}x{}{}{}", pooled->pool.kh, pooled->pool.kw,
                                           pooled->relu_mask ? "_relu" : "", pooled->positions ? "_argmax" : "")
                             : "") +
                     (bias ? "_bias" : "");
  KernelBuilder kb(name, wg);
  if (c.per_core > 0) kb.request_workgroups_per_core(c.per_core);
  Buf gy = kb.buffer(pooled ? "pooled_grad_y" : "grad_y", t, Access::Read);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf out = kb.buffer(splits == 1 ? "grad_w" : "partial_grad_w", t, Access::Write);
  std::optional<Buf> pool_input, positions, pooled_values;
  if (pooled && pooled->positions) {
    positions = kb.buffer("positions", Type::I32, Access::Read);
    if (pooled->relu_mask) pooled_values = kb.buffer("pooled", t, Access::Read);
  } else if (pooled) {
    pool_input = kb.buffer("pool_input", t, Access::Read);
  }
  std::optional<Buf> grad_b;
  if (bias && splits == 1) grad_b = kb.buffer("grad_b", t, Access::Write);
  // The bias's sums: a staging round's windows, q = lid + round x wg, are one channel's (q / (PH x PW)) in every image.
  const uint32_t windows = pooled ? Cout * uint32_t(pooled->pool.ho * pooled->pool.wo) : 0;
  const uint32_t rounds = bias ? (windows + wg - 1) / wg : 0;
  // At the end, `per_channel` invocations add each channel's round sums, then one invocation their totals.
  uint32_t per_channel = 1;
  while (bias && per_channel < 32 && 2 * per_channel * Cout <= wg) per_channel *= 2;
  const uint32_t shared_elements =
      std::max<uint32_t>(uint32_t(grad_weight_images_elements(s, c)), bias ? windows + Cout * per_channel : 0);
  Shared image = kb.shared("image", t, shared_elements);
  Val lid = kb.local_id();
  Val split = kb.group_id();
  // Where weight `owner`'s sum b x KW + col goes: its index in grad_w.
  auto weight_index = [&](Val owner, uint32_t b, uint32_t col) {
    Val k0 = (owner / (Cin * KH)) * cob, ci = (owner / KH) % Cin, r = owner % KH;
    return ((k0 + b) * Cin + ci) * (KH * KW) + r * KW + col;
  };
  auto store = [&](Val widx, Val v) {
    if (splits == 1) out[widx] = v;
    else out[split * stride + widx] = v;
  };
  kb.if_(split < splits, [&] {  // uniform: a folded grid's extra workgroups skip everything, barriers included
    // The padding around the input planes stays zero: the copies below write only their interiors.
    kb.for_(lid, kb.u32(Cin * m.x_plane), kb.u32(wg), [&](Val e) { image[m.x_at + e] = kb.constant(t, 0); });
    // The invocation's sums: output channels k0 .. k0 + cob - 1, input channel ci, window row r; its output rows
    // rg, rg + row_split, ...
    Val owner = rs == 1 ? min(lid, owners - 1) : min(lid / rs, owners - 1);
    Val rg = rs == 1 ? kb.u32(0) : lid % rs;
    Val k0 = (owner / (Cin * KH)) * cob, ci = (owner / KH) % Cin, r = owner % KH;
    std::vector<Var> acc;  // acc[b * KW + column]
    for (uint32_t i = 0; i < sums; ++i) acc.push_back(kb.var(fmt::format("acc{}", i), kb.constant(t, 0)));
    std::vector<Var> bias_acc;  // bias_acc[round]
    for (uint32_t i = 0; i < rounds; ++i) bias_acc.push_back(kb.var(fmt::format("bias{}", i), kb.constant(t, 0)));
    Val begin = split * chunk, end = min(begin + chunk, N);
    kb.for_(begin, end, [&](Val n) {
      kb.barrier();  // every invocation is done with the previous image (and the padding is written)
      // grad_y's planes and the input planes into the interiors of their padded copies.
      StagedRange gy_range{gy_image, [&](Val e) -> std::pair<Val, Val> {
        if (m.gy_ld == Wo) return {e, gy[n * gy_image + e]};  // unpadded: as they are (no divisions per element)
        Val ch = e / plane, hw = e % plane;
        return {ch * m.gy_plane + (hw / Wo) * m.gy_ld + hw % Wo, gy[n * gy_image + e]};
      }};
      if (pooled) {
        // One pooling window per item: its maximum found once, its kh x kw gradients staged together.
        const Pool2dShape& p = pooled->pool;
        const uint32_t PH = uint32_t(p.ho), PW = uint32_t(p.wo);
        auto round = std::make_shared<uint32_t>(0);  // stage_ranges takes the rounds in order, once each
        gy_range = StagedRange{windows, {}, [&, PH, PW, windows, round](Val q) {  // the counts by value: they end with this block
          Val ch = q / (PH * PW), wr = (q / PW) % PH, wc = q % PW;
          Val h0 = wr * uint32_t(p.kh), w0 = wc * uint32_t(p.kw);
          Val at = n * windows + q;
          std::vector<Val> grads;
          if (positions) {  // the window's maximum found in the forward pass
            Val g = pooled_values ? relu_masked(kb, gy[at], (*pooled_values)[at], t) : gy[at];
            if (bias) {
              // In a last, partial round the invocations past the windows add a clamped window's value, never read.
              const uint32_t r = (*round)++;
              bias_acc[r] = bias_acc[r] + g;
            }
            grads = max_pool2d_window_grads_at(kb, p, (*positions)[at], g, t);
          } else {
            grads = max_pool2d_window_grads(kb, p, [&](Val i) { return (*pool_input)[i]; }, (n * Cout + ch) * plane,
                                            cast(h0, Type::I32), cast(w0, Type::I32), gy[at], t, pooled->relu_mask);
          }
          std::vector<std::pair<Val, Val>> staged;
          for (uint32_t r = 0, k = 0; r < uint32_t(p.kh); ++r)
            for (uint32_t col = 0; col < uint32_t(p.kw); ++col, ++k)
              staged.push_back({ch * m.gy_plane + (h0 + r) * m.gy_ld + w0 + col, grads[k]});
          return staged;
        }};
      }
      StagedRange x_range{x_image, [&](Val e) -> std::pair<Val, Val> {
        Val ch = e / (H * W), hw = e % (H * W);
        return {m.x_at + ch * m.x_plane + (hw / W + uint32_t(s.pad_h)) * m.x_ld + (hw % W + uint32_t(s.pad_w)),
                x[n * x_image + e]};
      }};
      stage_ranges(kb, image, lid, wg, {gy_range, x_range});
      kb.barrier();
      kb.if_(lid < owners * rs, [&] {
        auto row = [&](Val ho) {
          // Input row ho + r of channel ci (padded: every column exists), then each output channel's row ho.
          Val x_row = m.x_at + ci * m.x_plane + (ho + r) * m.x_ld;
          std::vector<Val> xv;
          for (uint32_t j = 0; j < Wo + KW - 1; ++j) xv.push_back(image[x_row + j]);
          for (uint32_t b = 0; b < cob; ++b) {
            Val gy_row = (k0 + b) * m.gy_plane + ho * m.gy_ld;
            std::vector<Val> gv;
            for (uint32_t j = 0; j < Wo; ++j) gv.push_back(image[gy_row + j]);
            for (uint32_t col = 0; col < KW; ++col) {
              Val sum = acc[b * KW + col];
              for (uint32_t j = 0; j < Wo; ++j) sum = fma(gv[j], xv[j + col], sum);
              acc[b * KW + col] = sum;
            }
          }
        };
        if (rs == 1) kb.for_(kb.u32(0), kb.u32(Ho), row);
        else kb.for_(rg, kb.u32(Ho), kb.u32(rs), row);
      });
    });
    if (rs == 1) {
      kb.if_(lid < owners, [&] {
        for (uint32_t b = 0; b < cob; ++b)
          for (uint32_t col = 0; col < KW; ++col) store(weight_index(owner, b, col), acc[b * KW + col].get());
      });
    } else {
      // The row groups' sums through workgroup memory, each sum's row_split values together: sum i of owner o from
      // row group g at (o x sums + i) x row_split + g.
      kb.barrier();  // every invocation is done with the last image
      kb.if_(lid < owners * rs, [&] {
        for (uint32_t i = 0; i < sums; ++i) image[(owner * sums + i) * rs + rg] = acc[i].get();
      });
      kb.barrier();
      kb.for_(lid, kb.u32(owners * sums), kb.u32(wg), [&](Val p) {
        Val at = p * rs;
        Val total = image[at];
        for (uint32_t g = 1; g < rs; ++g) total = total + image[at + g];
        Val o = p / sums, i = p % sums;
        // i = b x KW + col: weight_index with b and col from a runtime i.
        Val widx = weight_index(o, 0, 0) + (i / KW) * (Cin * KH * KW) + i % KW;
        store(widx, total);
      });
    }
    if (bias) {
      // Each channel's sums: the round sums at their windows' indices, added by per_channel invocations a channel (in
      // a fixed order), then by one.
      const uint32_t channel_windows = windows / Cout;
      kb.barrier();  // every invocation is done with workgroup memory
      for (uint32_t r = 0; r < rounds; ++r) {
        if ((r + 1) * wg <= windows) image[lid + r * wg] = bias_acc[r].get();
        else kb.if_(lid + r * wg < windows, [&] { image[lid + r * wg] = bias_acc[r].get(); });
      }
      kb.barrier();
      kb.if_(lid < Cout * per_channel, [&] {
        Val ch = lid / per_channel, part = lid % per_channel;
        Var sum = kb.var("bias_part", kb.constant(t, 0));
        kb.for_(part, kb.u32(channel_windows), kb.u32(per_channel),
                [&](Val i) { sum = sum + image[ch * channel_windows + i]; });
        image[windows + lid] = sum.get();
      });
      kb.barrier();
      kb.if_(lid < Cout, [&] {
        Val total = image[windows + lid * per_channel];
        for (uint32_t j = 1; j < per_channel; ++j) total = total + image[windows + lid * per_channel + j];
        if (grad_b) (*grad_b)[lid] = total;
        else out[split * stride + weights + lid] = total;
      });
    }
  });
  return {kb.finish(), splits};
}

}  // namespace spire::lowering::heavy
