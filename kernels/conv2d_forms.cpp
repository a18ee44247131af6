#include "kernels/conv2d_forms.h"

#include <algorithm>

#include "kernels/conv2d_gemm_kernels.h"
#include "kernels/conv2d_mma_kernel.h"
#include "kernels/conv2d_winograd_kernels.h"

namespace spire::lowering::heavy {

bool conv2d_is_gemm_config(const Config& c) { return c.has("tile_m"); }

std::optional<MatmulTiling> conv2d_gemm_pays(const Conv2dShape& s, const MatmulShape& gemm, kir::Type t) {
  if (s.groups != 1) return std::nullopt;
  const MatmulTiling g = choose_matmul_tiling(gemm, t);
  if (g.tile_m < 64) return std::nullopt;
  return g;
}

std::optional<MatmulTiling> conv2d_small_gemm_pays(const Conv2dShape& s, const MatmulShape& gemm,
                                                   kir::Type t, const Limits& limits) {
  if (limits.cpu || s.groups != 1 || gemm.k < 64 || gemm.m < 32) return std::nullopt;
  const uint32_t k = t == kir::Type::F64 ? 16 : 32;
  const int64_t blocks32 = gemm.batch_count() * ((gemm.m + 31) / 32) * ((gemm.n + 31) / 32);
  if (blocks32 >= 64) return MatmulTiling{32, 32, k, 2, 2};
  return MatmulTiling{16, 16, k, 1, 1};
}

std::vector<Config> conv2d_with_gemm_candidates(Config heuristic, std::vector<Config> direct,
                                                const Conv2dShape& s, const MatmulShape& gemm, kir::Type t,
                                                const Limits& limits,
                                                const std::function<Config(const MatmulTiling&)>& config) {
  std::vector<Config> out{heuristic};
  auto add = [&](const Config& c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  for (const Config& c : direct) add(c);
  if (s.groups == 1)
    for (const MatmulTiling& tl : matmul_candidates(gemm, t, limits)) add(config(tl));
  return out;
}

std::optional<MatmulTiling> conv2d_grad_weight_gemm_pays(const Conv2dShape& s, const MatmulShape& gemm,
                                                         kir::Type t) {
  if (s.groups != 1 || gemm.m < 64 || gemm.n < 64) return std::nullopt;
  const bool f64 = t == kir::Type::F64;
  if (gemm.k < 256) {
    if ((gemm.m / 64) * (gemm.n / 64) >= 64) return MatmulTiling{64, 64, f64 ? 8u : 16u, 4, 4};
    return MatmulTiling{32, 32, f64 ? 8u : 16u, 2, 2};
  }
  if (gemm.m >= 128 && gemm.n >= 128) return MatmulTiling{128, 128, f64 ? 4u : 8u, 8, 8};
  return MatmulTiling{64, 64, f64 ? 8u : 16u, 4, 4};
}

std::optional<MatmulTiling> conv2d_small_grad_input_tiling(const Conv2dShape& s, const MatmulShape& longest,
                                                           kir::Type t, const Limits& limits) {
  if (limits.cpu || s.groups != 1 || longest.k < 64 || longest.m < 32) return std::nullopt;
  // The blocks of a size over the phases a tap reaches.
  auto blocks_of = [&](int64_t size) {
    int64_t blocks = 0;
    for (const GradInputPhase& phase : conv2d_grad_input_phases(s)) {
      const MatmulShape p = conv2d_grad_input_phase_gemm_shape(s, phase);
      if (p.k > 0) blocks += ((p.m + size - 1) / size) * ((p.n + size - 1) / size);
    }
    return blocks;
  };
  const bool f64 = t == kir::Type::F64;
  MatmulTiling tl{16, 16, f64 ? 8u : 16u, 1, 1};
  int64_t wanted = 512;
  if (longest.k >= 2048 && longest.m >= 64) {
    tl = MatmulTiling{64, 64, f64 ? 8u : 16u, 4, 4};
    wanted = 128;
  } else if (blocks_of(32) >= 64) {
    tl = MatmulTiling{32, 32, f64 ? 16u : 32u, 2, 2};
  }
  const int64_t blocks = blocks_of(tl.tile_m);
  const int64_t slices = (longest.k + tl.tile_k - 1) / tl.tile_k;
  while (tl.splits < 64 && blocks * tl.splits * 2 <= wanted && slices >= 8 * int64_t(tl.splits) * 2) tl.splits *= 2;
  return tl;
}

Config conv2d_winograd_config(const MatmulTiling& tl, uint32_t tile) { return tl.config().set("winograd", tile); }

bool conv2d_is_winograd_config(const Config& c) { return c.has("winograd"); }

uint32_t conv2d_winograd_tile_of(const Config& c) { return uint32_t(c.get("winograd")); }

int64_t conv2d_winograd_scratch_bytes(const Conv2dShape& s, kir::Type t, uint32_t tile) {
  return conv2d_winograd_planes(tile) * std::max(s.cin, s.cout) * conv2d_winograd_tiles(s, tile) *
         int64_t(dtype_bytes(t));
}

bool conv2d_winograd_pays(const Conv2dShape& s, kir::Type t) {
  return s.cin >= 32 && s.cout >= 32 && conv2d_winograd_scratch_bytes(s, t, 2) <= (int64_t(1) << 30);
}

uint32_t conv2d_winograd_tile(const Conv2dShape& s, kir::Type t) {
  const int64_t tiles = conv2d_winograd_tiles(s, 4);
  const bool fewer = 36 * tiles < 16 * conv2d_winograd_tiles(s, 2);
  return t == kir::Type::F32 && tiles >= 256 && fewer && conv2d_winograd_scratch_bytes(s, t, 4) <= (int64_t(1) << 30) ? 4 : 2;
}

MatmulTiling conv2d_winograd_tiling_64(kir::Type t) {
  return t == kir::Type::F32 ? MatmulTiling{64, 64, 16, 8, 8} : MatmulTiling{64, 64, 8, 4, 4};
}

MatmulTiling conv2d_winograd_tiling(const MatmulShape& product, kir::Type t) {
  MatmulTiling tl = choose_matmul_tiling(product, t);
  if (t == kir::Type::F32 && tl == MatmulTiling{64, 64, 16, 4, 4}) tl = conv2d_winograd_tiling_64(t);
  return tl;
}

MatmulTiling conv2d_winograd_grad_weight_tiling(const MatmulShape& product, kir::Type t) {
  MatmulTiling tl = conv2d_winograd_tiling(product, t);
  if (tl.tile_m < 64 && product.m >= 64 && product.n >= 64) tl = conv2d_winograd_tiling_64(t);
  const int64_t blocks = product.batch[0] * ((product.m + tl.tile_m - 1) / tl.tile_m) * ((product.n + tl.tile_n - 1) / tl.tile_n);
  const int64_t slices = (product.k + tl.tile_k - 1) / tl.tile_k;
  const int64_t wanted = tl.tile_m * tl.tile_n >= 128 * 128 ? 256 : 512;
  while (blocks * tl.splits < wanted && slices >= 8 * int64_t(tl.splits) * 2 && tl.splits < 64) tl.splits *= 2;
  // Still fewer: a small batch's few tiles. 4x4 outputs per invocation then, 4x the invocations of 8x8 for the same
  // blocks (batch 1 on the H100: 64 channels at 56x56 in 16 x 4 blocks took 0.034 / 0.028 ms on vulkan:0 / cuda:0 with
  // 8x8, against 0.026 / 0.024 for the implicit GEMM it replaced).
  if (tl.tile_m == 64 && tl.tile_n == 64 && tl.reg_m == 8 && blocks * tl.splits < wanted) tl.reg_m = tl.reg_n = 4;
  return tl;
}

bool conv2d_winograd_addressable(const Conv2dShape& s, kir::Type t, uint32_t tile, uint32_t max_splits) {
  const int64_t planes = conv2d_winograd_planes(tile);
  return conv2d_winograd_scratch_bytes(s, t, tile) / dtype_bytes(t) < (int64_t(1) << 31) &&
         planes * max_splits * s.cin * s.cout < (int64_t(1) << 31) && conv2d_winograd_tiles(s, tile) < (int64_t(1) << 31);
}

Conv2dWinogradTiles conv2d_winograd_tiles_offered(const Conv2dShape& s, kir::Type t, uint32_t max_splits) {
  Conv2dWinogradTiles out;
  for (uint32_t tile : {2u, 4u})
    if ((tile == 2 || t == kir::Type::F32) && conv2d_winograd_addressable(s, t, tile, max_splits)) out.offered.push_back(tile);
  const uint32_t best = conv2d_winograd_tile(s, t);
  if (std::find(out.offered.begin(), out.offered.end(), best) != out.offered.end()) out.chosen = best;
  else if (!out.offered.empty()) out.chosen = out.offered.front();
  return out;
}

bool conv2d_channels_last_pays(const Conv2dShape& s, kir::Type half) {
  if (s.cin % 8 != 0) return false;
  if (s.kh * s.kw > 1) return true;
  const bool strided = s.stride_h * s.stride_w > 1;
  return !conv2d_copies_input_rows(s, half) && s.cout >= (strided ? 1024 : 256);
}

bool conv2d_tensor_cores_pay(const Conv2dShape& s, kir::Type half, const Limits& limits) {
  const bool last = conv2d_channels_last_pays(s, half);
  const bool winograd = conv2d_winograd_applies(s) && conv2d_winograd_pays(s, kir::Type::F32);
  if (winograd && half == kir::Type::F32 && s.cout >= 64) return false;
  if (winograd && !last && !(limits.shared_bytes < 64 * 1024 && s.cout >= 128)) return false;
  const MatmulTiling t = last ? choose_conv2d_channels_last_tiling(s, half, limits)
                                     : choose_conv2d_mma_tiling(s, half, limits);
  const MatmulShape g = conv2d_mma_gemm_shape(s, half, last);
  // Half as many blocks where each has a long window (1024 or more terms) to sum: resnet50's layer4 1x1 layers of 2048
  // input channels at batch 32 (52 blocks) took 0.15 ms each on the f32 GEMM in bf16 on the H200.
  const int64_t blocks = ((g.m + t.tile_m - 1) / t.tile_m) * ((g.n + t.tile_n - 1) / t.tile_n);
  return blocks >= 64 || (blocks >= 32 && g.k >= 1024);
}

}  // namespace spire::lowering::heavy
