#include "lowering/heavy_kernels/conv2d_grad_weight_images_kernel.h"

#include "lowering/heavy_kernels/staged_copy.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

namespace {

constexpr uint32_t kMaxRowCols = 32;
constexpr uint32_t kMaxSums = 64;
constexpr uint32_t kMaxSplits = 512;
constexpr uint64_t kSharedBytes = 16384;  // what every Vulkan device offers

}  // namespace

uint32_t grad_weight_images_owners(const Conv2dShape& s, uint32_t co_block) {
  return uint32_t(s.cout / std::max<uint32_t>(co_block, 1) * s.cin * s.kh);
}

uint64_t grad_weight_images_elements(const Conv2dShape& s) {
  return uint64_t(s.cout * s.ho * s.wo) + uint64_t(s.cin * (s.h + 2 * s.pad_h) * (s.w + 2 * s.pad_w));
}

void check_grad_weight_images(const Conv2dShape& s, Type t, const GradWeightConfig& c, const Limits& limits) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("conv2d_grad_weight: config '{}' {}", c.config().text(), why));
  };
  if (s.stride_h != 1 || s.stride_w != 1 || s.dil_h != 1 || s.dil_w != 1 || s.groups != 1)
    fail("keeps every weight in one workgroup, which needs stride 1, dilation 1 and one group");
  if (s.wo > kMaxRowCols) fail(fmt::format("slides along output rows, which must be at most {} wide", kMaxRowCols));
  if (!c.row_mode || c.staged || c.block_rows != s.kh || c.block_cols != s.kw)
    fail("keeps every weight in one workgroup: row_mode=1, the whole window as the block, not staged");
  if (c.co_block < 1 || s.cout % c.co_block != 0 || c.co_block * s.kw > kMaxSums)
    fail(fmt::format("needs a co_block dividing the {} output channels with at most {} sums per invocation", s.cout,
                     kMaxSums));
  const uint32_t owners = grad_weight_images_owners(s, c.co_block);
  if (c.wg < owners || c.wg > 1024 || (c.wg & (c.wg - 1)) != 0)
    fail(fmt::format("needs a power-of-two workgroup of at least its {} invocations that own sums", owners));
  if (c.wg > limits.max_invocations) fail(fmt::format("needs {} invocations, beyond the device's {}", c.wg, limits.max_invocations));
  if (c.splits < 1 || c.splits > kMaxSplits || c.splits > std::max<int64_t>(s.n, 1))
    fail(fmt::format("has {} splits of the {} images (1..{})", c.splits, s.n, kMaxSplits));
  const uint64_t bytes = grad_weight_images_elements(s) * type_bytes(t);
  if (bytes > std::max<uint64_t>(limits.shared_bytes, kSharedBytes))
    fail(fmt::format("stages {} bytes of an image in workgroup memory, more than the device has", bytes));
}

HeavyKernel conv2d_grad_weight_images_kernel(const Conv2dShape& s, Type t, const GradWeightConfig& c,
                                             const Limits& limits) {
  check_grad_weight_images(s, t, c, limits);
  const uint32_t N = index_u32(s.n, "conv2d_grad_weight images"), H = uint32_t(s.h), W = uint32_t(s.w);
  const uint32_t Ho = uint32_t(s.ho), Wo = uint32_t(s.wo), KH = uint32_t(s.kh), KW = uint32_t(s.kw);
  const uint32_t Cin = uint32_t(s.cin), Cout = uint32_t(s.cout), cob = c.co_block, wg = c.wg, splits = c.splits;
  const uint32_t Hp = H + 2 * uint32_t(s.pad_h), Wp = W + 2 * uint32_t(s.pad_w);
  const uint32_t weights = Cout * Cin * KH * KW, owners = grad_weight_images_owners(s, cob);
  index_u32(int64_t(weights) * splits, "conv2d_grad_weight partial sums");
  index_u32(s.n * s.cout * s.ho * s.wo, "conv2d_grad_weight grad_y elements");
  index_u32(s.n * s.cin * s.h * s.w, "conv2d_grad_weight input elements");
  const uint32_t plane = Ho * Wo, gy_image = Cout * plane, x_image = Cin * H * W;
  const uint32_t x_at = gy_image, padded_plane = Hp * Wp, elements = uint32_t(grad_weight_images_elements(s));
  const uint32_t chunk = (N + splits - 1) / splits;  // images per split

  std::string name = "conv2d_grad_weight_" + s.text() + "_" + float_suffix(t, "conv2d_grad_weight") +
                     fmt::format("_wg{}_s{}_all_pairs_co{}{}", wg, splits, cob,
                                 c.per_core > 0 ? fmt::format("_pc{}", c.per_core) : "");
  KernelBuilder kb(name, wg);
  if (c.per_core > 0) kb.request_workgroups_per_core(c.per_core);
  Buf gy = kb.buffer("grad_y", t, Access::Read);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf out = kb.buffer(splits == 1 ? "grad_w" : "partial_grad_w", t, Access::Write);
  Shared image = kb.shared("image", t, elements);
  Val lid = kb.local_id();
  Val split = kb.group_id();
  kb.if_(split < splits, [&] {  // uniform: a folded grid's extra workgroups skip everything, barriers included
    // The padding around the input planes stays zero: the copies below write only their interiors.
    kb.for_(lid, kb.u32(Cin * padded_plane), kb.u32(wg), [&](Val e) { image[x_at + e] = kb.constant(t, 0); });
    // The invocation's sums: output channels k0 .. k0 + cob - 1, input channel ci, window row r.
    Val owner = min(lid, owners - 1);
    Val k0 = (owner / (Cin * KH)) * cob, ci = (owner / KH) % Cin, r = owner % KH;
    std::vector<Var> acc;  // acc[b * KW + column]
    for (uint32_t i = 0; i < cob * KW; ++i) acc.push_back(kb.var(fmt::format("acc{}", i), kb.constant(t, 0)));
    Val begin = split * chunk, end = min(begin + chunk, N);
    kb.for_(begin, end, [&](Val n) {
      kb.barrier();  // every invocation is done with the previous image (and the padding is written)
      // grad_y's planes as they are, the input planes into the interiors of their padded copies.
      StagedRange gy_range{gy_image, [&](Val e) -> std::pair<Val, Val> { return {e, gy[n * gy_image + e]}; }};
      StagedRange x_range{x_image, [&](Val e) -> std::pair<Val, Val> {
        Val ch = e / (H * W), hw = e % (H * W);
        return {x_at + ch * padded_plane + (hw / W + uint32_t(s.pad_h)) * Wp + (hw % W + uint32_t(s.pad_w)),
                x[n * x_image + e]};
      }};
      stage_ranges(kb, image, lid, wg, {gy_range, x_range});
      kb.barrier();
      kb.if_(lid < owners, [&] {
        kb.for_(kb.u32(0), kb.u32(Ho), [&](Val ho) {
          // Input row ho + r of channel ci (padded: every column exists), then each output channel's row ho.
          Val x_row = x_at + ci * padded_plane + (ho + r) * Wp;
          std::vector<Val> xv;
          for (uint32_t j = 0; j < Wo + KW - 1; ++j) xv.push_back(image[x_row + j]);
          for (uint32_t b = 0; b < cob; ++b) {
            Val gy_row = (k0 + b) * plane + ho * Wo;
            std::vector<Val> gv;
            for (uint32_t j = 0; j < Wo; ++j) gv.push_back(image[gy_row + j]);
            for (uint32_t col = 0; col < KW; ++col) {
              Val sum = acc[b * KW + col];
              for (uint32_t j = 0; j < Wo; ++j) sum = fma(gv[j], xv[j + col], sum);
              acc[b * KW + col] = sum;
            }
          }
        });
      });
    });
    kb.if_(lid < owners, [&] {
      for (uint32_t b = 0; b < cob; ++b)
        for (uint32_t col = 0; col < KW; ++col) {
          Val widx = ((k0 + b) * Cin + ci) * (KH * KW) + r * KW + col;
          if (splits == 1) out[widx] = acc[b * KW + col].get();
          else out[split * weights + widx] = acc[b * KW + col].get();
        }
    });
  });
  return {kb.finish(), splits};
}

}  // namespace spire::lowering::heavy
