#include "kernels/conv2d_mma_kernel.h"

#include "kernels/conv2d_gemm_kernels.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

MatmulShape conv2d_mma_gemm_shape(const Conv2dShape& s, Type half, bool channels_last) {
  MatmulShape g = conv2d_gemm_shape(s);
  if (half == Type::F32) g.tf32 = true;  // f32 operands multiplied as TF32
  else g.a_half = g.b_half = half;
  g.b_transposed = channels_last;
  if (channels_last) g.k = s.kh * s.kw * conv2d_channels_last_depth(s);
  return g;
}

bool conv2d_fits_tensor_cores(const Conv2dShape& s) {
  return s.groups == 1 && s.cout > 0 && s.n * s.ho * s.wo > 0 && s.cin * s.kh * s.kw > 0;
}

int64_t conv2d_channels_last_depth(const Conv2dShape& s) { return (s.cin + 7) / 8 * 8; }

bool conv2d_copies_input_rows(const Conv2dShape& s, Type half) {
  const int64_t piece = 16 / (half == Type::F32 ? 4 : 2);
  return s.kh == 1 && s.kw == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0 &&
         (s.ho * s.wo) % piece == 0;
}

MmaStaging conv2d_mma_staging(const Conv2dShape& s, Type half, const MatmulTiling& tiling, bool async_copies,
                              bool channels_last) {
  const bool gathered = !channels_last && !conv2d_copies_input_rows(s, half);
  return mma_staging(conv2d_mma_gemm_shape(s, half, channels_last), tiling, async_copies, gathered);
}

namespace {

MatmulTiling conv_mma_tiling(uint32_t tile_m, uint32_t tile_n, uint32_t tile_k, uint32_t warps_m, uint32_t warps_n) {
  MatmulTiling t{tile_m, tile_n, tile_k, 1, 1};
  t.warps_m = warps_m;
  t.warps_n = warps_n;
  t.stages = 2;  // the weights' copies may pipeline; the gathered input is staged in one stage regardless
  return t;
}

bool fits(const Conv2dShape& s, Type half, const MatmulTiling& tl, const Limits& limits, bool channels_last = false) {
  return tl.invocations() <= limits.max_invocations &&
         conv2d_mma_staging(s, half, tl, limits.async_copy, channels_last).shared_bytes <= limits.shared_bytes;
}

// Accumulators leave 4 at a time (MatmulTiling::results), else 2, where a subgroup's count divides by it and the
// staging still fits: a convolution's epilogue (bias, residual, rounding) loads as it stores, and one accumulator a
// round issued those loads a round at a time between workgroup barriers. On its own this gained nothing on the H200
// (the rounds' registers left one workgroup a core); with two workgroups a core (conv2d_mma_kernel) it did.
MatmulTiling with_result_rounds(MatmulTiling t, const Conv2dShape& s, Type half, const Limits& limits, bool channels_last) {
  const uint32_t frags = mma_subgroup_accumulators(t);
  for (uint32_t results : {4u, 2u}) {
    MatmulTiling r = t;
    r.results = results;
    if (frags % results == 0 && fits(s, half, r, limits, channels_last)) return r;
  }
  return t;
}

// The block's channels: 128, or 64 or 32 where there are fewer.
uint32_t block_channels(const Conv2dShape& s) { return s.cout >= 128 ? 128 : s.cout >= 64 ? 64 : 32; }

}  // namespace

MatmulTiling choose_conv2d_mma_tiling(const Conv2dShape& s, Type half, const Limits& limits) {
  // 8 subgroups where the device allows 256 invocations: the staging of a gathered slice is spread over more
  // invocations, and the core holds two or three such workgroups to hide its loads.
  const bool wide = limits.max_invocations >= 256;
  const uint32_t m = block_channels(s);
  // 128 or more channels where workgroup memory is small (NVIDIA's Vulkan driver, 48 KiB): blocks of 128 x 64 with 4 x 2
  // subgroups of 32 x 32, the tuner's pick for resnet18's layer3.0.conv2 at batch 64 there, and 1.2-1.5x faster than
  // 128 x 128 blocks of 2 x 4 on its strided layers; on cuda:0 those ran up to 20% slower than 128 x 128, which stays
  // (docs/PERFORMANCE.md). Fewer channels: 128 positions.
  const bool small_shared = limits.shared_bytes < 64 * 1024;
  MatmulTiling t = !wide                      ? conv_mma_tiling(m, 64, 32, 2, 2)
                   : m == 128 && small_shared ? conv_mma_tiling(128, 64, 32, 4, 2)
                                              : conv_mma_tiling(m, 128, 32, 2, 4);
  // Input rows copied as the weights are (conv2d_copies_input_rows): both operands pipeline, 3 stages where they fit.
  if (conv2d_copies_input_rows(s, half) && limits.async_copy) {
    t.stages = 3;
    if (fits(s, half, t, limits)) return with_result_rounds(t, s, half, limits, false);
    t.stages = 2;
  }
  if (fits(s, half, t, limits)) return with_result_rounds(t, s, half, limits, false);
  return conv_mma_tiling(32, 32, 16, 2, 2);
}

std::vector<MatmulTiling> conv2d_mma_candidates(const Conv2dShape& s, Type half, const Limits& limits) {
  std::vector<MatmulTiling> out{choose_conv2d_mma_tiling(s, half, limits)};
  const uint32_t shapes[][4] = {{32, 64, 2, 2},   {32, 128, 2, 4},  {64, 64, 2, 2},  {64, 128, 2, 2},
                                {64, 128, 2, 4},  {64, 256, 2, 4},  {128, 64, 4, 2}, {128, 128, 2, 2},
                                {128, 128, 2, 4}, {128, 128, 4, 2}, {128, 256, 2, 4}};
  // Copied input rows pipeline: their depths are the tuner's to try too.
  const std::vector<uint32_t> depths =
      conv2d_copies_input_rows(s, half) && limits.async_copy ? std::vector<uint32_t>{2, 3, 4} : std::vector<uint32_t>{2};
  for (const auto& sh : shapes)
    for (uint32_t k : {16u, 32u, 64u})
      for (uint32_t stages : depths) {
        MatmulTiling tl = conv_mma_tiling(sh[0], sh[1], k, sh[2], sh[3]);
        tl.stages = stages;
        // A block more than twice the (rounded up) channels only adds masked work.
        if (!fits(s, half, tl, limits) || tl.tile_m > 2 * std::max<int64_t>(s.cout, 16)) continue;
        if (std::find(out.begin(), out.end(), tl) == out.end()) out.push_back(tl);
      }
  return out;
}

MatmulTiling choose_conv2d_channels_last_tiling(const Conv2dShape& s, Type half, const Limits& limits) {
  const uint32_t m = block_channels(s);
  MatmulTiling t = limits.max_invocations >= 256 ? conv_mma_tiling(m, 128, 32, 2, 4) : conv_mma_tiling(m, 64, 32, 2, 2);
  // Long windows (Cin * kh * kw of 2048 or more) take 64-deep slices, 2 stages, where workgroup memory is large: on
  // cuda:0 of the H100 the tuner's picks for resnet18's 256- and 512-channel 3x3 layers at batch 64 in bf16 (1.28-1.49x
  // the 32-deep 3-stage pipeline; on vulkan:0 its 48 KiB keep the heuristic above the tuner's pick).
  if (t.tile_m == 128 && limits.shared_bytes >= 64 * 1024 && conv2d_channels_last_depth(s) * s.kh * s.kw >= 2048) {
    t.tile_k = 64;
    if (fits(s, half, t, limits, true)) return with_result_rounds(t, s, half, limits, true);
    t.tile_k = 32;
  }
  for (t.stages = 3; t.stages >= 2; --t.stages)
    if (fits(s, half, t, limits, true)) return with_result_rounds(t, s, half, limits, true);
  return conv_mma_tiling(32, 32, 16, 2, 2);
}

std::vector<MatmulTiling> conv2d_channels_last_candidates(const Conv2dShape& s, Type half, const Limits& limits) {
  std::vector<MatmulTiling> out{choose_conv2d_channels_last_tiling(s, half, limits)};
  const uint32_t shapes[][4] = {{32, 128, 2, 4},  {64, 64, 2, 2},   {64, 128, 2, 4},  {128, 64, 4, 2},
                                {128, 128, 2, 4}, {128, 128, 4, 2}, {128, 256, 2, 4}, {256, 128, 4, 2}};
  for (const auto& sh : shapes)
    for (uint32_t k : {32u, 64u})
      for (uint32_t stages : {2u, 3u, 4u}) {
        MatmulTiling tl = conv_mma_tiling(sh[0], sh[1], k, sh[2], sh[3]);
        tl.stages = stages;
        if (!fits(s, half, tl, limits, true) || tl.tile_m > 2 * std::max<int64_t>(s.cout, 16)) continue;
        if (std::find(out.begin(), out.end(), tl) == out.end()) out.push_back(tl);
      }
  return out;
}

HeavyKernel conv2d_mma_kernel(const Conv2dShape& s, Type half, const MatmulTiling& tl, bool async_copies,
                              bool channels_last) {
  if (half != Type::F16 && half != Type::BF16 && half != Type::F32)
    throw std::invalid_argument(fmt::format("conv2d on tensor cores {}: operands of type {}, not f16, bf16 or f32 (TF32)",
                                            s.text(), dtype_name(half)));
  if (!conv2d_fits_tensor_cores(s))
    throw std::invalid_argument(fmt::format("conv2d on tensor cores {}: ungrouped convolutions only", s.text()));
  check_mma_tiling(tl);
  const MatmulShape g = conv2d_mma_gemm_shape(s, half, channels_last);
  const bool rows = !channels_last && conv2d_copies_input_rows(s, half);
  const MmaStaging plan = conv2d_mma_staging(s, half, tl, async_copies, channels_last);
  index_u32(s.n * (channels_last ? conv2d_channels_last_depth(s) : s.cin) * s.h * s.w, "conv2d input elements");
  index_u32(s.n * s.cout * s.ho * s.wo, "conv2d output elements");
  const std::string name = fmt::format("conv2d_{}_{}{}", s.text(), half == Type::F32 ? "tf32" : dtype_name(half),
                                       channels_last ? "_nhwc" : "") +
                           mma_name_suffix(tl, plan);
  const uint32_t M = index_u32(g.m, "conv2d output channels"), K = index_u32(g.k, "conv2d window size");
  const uint32_t N = index_u32(g.n, "conv2d output positions");
  const uint32_t cin = uint32_t(s.cin), H = uint32_t(s.h), W = uint32_t(s.w), wo = uint32_t(s.wo);
  const uint32_t kw = uint32_t(s.kw), taps = uint32_t(s.kh * s.kw), P = uint32_t(s.ho * s.wo);
  const uint32_t sh = uint32_t(s.stride_h), sw = uint32_t(s.stride_w), ph = uint32_t(s.pad_h), pw = uint32_t(s.pad_w);
  const uint32_t dh = uint32_t(s.dil_h), dw = uint32_t(s.dil_w);

  KernelBuilder kb(name, tl.invocations());
  // Two workgroups a core (ptxas then keeps to 128 registers an invocation) where accumulators leave in rounds: NVIDIA's
  // JIT took 168-190 registers for rounds of 4, one workgroup a core, and resnet50's 1x1 layers at 56x56 in bf16 on the
  // H200 ran no faster than one at a time (0.054 and 0.17 ms, without and with a residual epilogue); asking for two took
  // them to 0.041 and 0.115, the model 4.14 -> 3.59 ms (profiled). Not for TF32's f32 operands (5.74 -> 5.81 ms).
  if (tl.results > 1 && half != Type::F32) kb.request_workgroups_per_core(2);
  Buf x = kb.buffer("x", half, Access::Read);
  MmaGemmIo io{kb.buffer("w", half, Access::Read), std::nullopt, {}, {}, {}, {}};
  Buf y = kb.buffer("y", Type::F32, Access::Write);
  // Per column (output position) of a block: the image's first element, the window's top-left row and column before
  // the padding (unsigned: a window over the top or left edge wraps, and one `< H` / `< W` test catches both sides).
  io.b_prepare = [&](Val col) -> std::vector<Val> {
    Val c = min(col, N - 1);
    Val p = c % P;
    return {col < N, (c / P) * (channels_last ? H * W : cin * H * W), (p / wo) * sh, (p % wo) * sw};
  };
  if (channels_last) {
    // k = (tap, ci) over the padded channels: a piece of 8 k (4 for TF32's f32) is that many channels of the tap's
    // pixel, or its zeros over the padding (channels come in 8s, so a piece never straddles two pixels).
    io.b = x;
    io.b_locate = [&, depth = uint32_t(conv2d_channels_last_depth(s))](const std::vector<Val>& at, Val k) {
      Val kc = min(k, K - 1);
      Val tap = kc / depth, ci = kc % depth;
      Val ih = at[2] + (tap / kw) * dh - ph;
      Val iw = at[3] + (tap % kw) * dw - pw;
      Val valid = at[0] & (k < K) & (ih < H) & (iw < W);
      return std::pair<Val, Val>{valid, (at[1] + min(ih, H - 1) * W + min(iw, W - 1)) * depth + ci};
    };
  }
  if (rows) {
    // k = ci: a piece of a slice is 8 consecutive positions (4 for TF32's f32) of channel k of one image (the images'
    // positions come in whole pieces, so a piece never straddles two), contiguous in the NCHW input.
    io.b = x;
    io.b_prepare = [&](Val col) -> std::vector<Val> {
      Val c = min(col, N - 1);
      return {col < N, (c / P) * (cin * P) + c % P};
    };
    io.b_locate = [&](const std::vector<Val>& at, Val k) {
      return std::pair<Val, Val>{at[0] & (k < K), at[1] + min(k, K - 1) * P};
    };
  }
  // Each element moves as its 16-bit word (no conversion: bf16's are integer sequences, and a gathered slice is
  // thousands of them), zero where the window hangs over the padding or past the product.
  const Val zero = half == Type::F32 ? kb.f32(0) : cast(kb.f32(0), half);
  if (!channels_last && !rows) io.b_gather = [&](Shared tile, Val to, const std::vector<Val>& at, Val k) {
    Val kc = min(k, K - 1);
    Val ci = kc / taps, tap = kc % taps;
    Val ih = at[2] + (tap / kw) * dh - ph;
    Val iw = at[3] + (tap % kw) * dw - pw;
    Val valid = at[0] & (k < K) & (ih < H) & (iw < W);
    Val from = at[1] + (ci * H + min(ih, H - 1)) * W + min(iw, W - 1);
    kb.if_else(valid, [&] { tile[to] = x[from]; }, [&] { tile[to] = zero; });
  };
  io.store = [&](Val, Val r, Val c, Val v) { y[((c / P) * M + r) * P + c % P] = v; };
  const uint64_t groups = emit_mma_gemm(kb, g, tl, plan, io);
  return {kb.finish(), groups};
}

}  // namespace spire::lowering::heavy
