#include "lowering/heavy_kernels/conv2d_gemm_kernel.h"

#include <stdexcept>

#include <fmt/format.h>

#include "lowering/heavy_kernels/tiled_gemm.h"

namespace spire::lowering::heavy {

using namespace kir;

MatmulShape conv2d_gemm_shape(const Conv2dShape& s) {
  MatmulShape g;
  g.m = s.cout;
  g.k = s.cin_per_group() * s.kh * s.kw;
  g.n = s.n * s.ho * s.wo;
  return g;
}

HeavyKernel conv2d_gemm_kernel(const Conv2dShape& s, Type t, const MatmulTiling& tl) {
  const std::string name = fmt::format("conv2d_{}_{}_gemm_t{}x{}x{}_r{}x{}", s.text(), float_suffix(t, "conv2d"), tl.tile_m,
                                       tl.tile_n, tl.tile_k, tl.reg_m, tl.reg_n);
  if (s.groups != 1)
    throw std::invalid_argument(fmt::format("conv2d {}: the GEMM form takes ungrouped convolutions only", s.text()));
  if (tl.tile_m % tl.reg_m || tl.tile_n % tl.reg_n || tl.tile_k == 0)
    throw std::invalid_argument(fmt::format("conv2d {}: tiling {}x{}x{} with {}x{} per invocation is inconsistent",
                                            s.text(), tl.tile_m, tl.tile_n, tl.tile_k, tl.reg_m, tl.reg_n));
  index_u32(s.n * s.cin * s.h * s.w, "conv2d input elements");
  index_u32(s.n * s.cout * s.ho * s.wo, "conv2d output elements");
  const MatmulShape g = conv2d_gemm_shape(s);
  const uint32_t M = index_u32(g.m, "conv2d output channels"), K = index_u32(g.k, "conv2d window size");
  const uint32_t N = index_u32(g.n, "conv2d output positions");
  if (M == 0 || N == 0) return empty_result(name);
  const uint32_t Cin = uint32_t(s.cin), H = uint32_t(s.h), W = uint32_t(s.w), Wo = uint32_t(s.wo);
  const uint32_t KW = uint32_t(s.kw), taps = uint32_t(s.kh * s.kw), P = uint32_t(s.ho * s.wo);
  const uint32_t sh = uint32_t(s.stride_h), sw = uint32_t(s.stride_w), ph = uint32_t(s.pad_h), pw = uint32_t(s.pad_w);
  const uint32_t dh = uint32_t(s.dil_h), dw = uint32_t(s.dil_w);
  const uint32_t tiles_m = (M + tl.tile_m - 1) / tl.tile_m, tiles_n = (N + tl.tile_n - 1) / tl.tile_n;

  KernelBuilder kb(name, tl.invocations());
  Buf x = kb.buffer("x", t, Access::Read);
  Buf w = kb.buffer("w", t, Access::Read);
  Buf y = kb.buffer("y", t, Access::Write);
  Val lid = kb.local_id();
  Val group = kb.group_id();
  Val tile_col = group % tiles_n;
  Val tile_row = group / tiles_n;
  // Workgroups beyond the problem (a folded grid) skip everything, barriers included (uniform per workgroup).
  kb.if_(tile_row < tiles_m, [&] {
    GemmOperands io;
    io.a = [&](Val r, Val k) {
      return select((r < M) & (k < K), Val(w[min(r, M - 1) * K + min(k, K - 1)]), kb.constant(t, 0));
    };
    // The im2col element (k = (ci, kh, kw), c = (n, ho, wo)). Rows and columns before the padding wrap around
    // as unsigned numbers, so one `< H` / `< W` test catches both sides; the address is clamped either way.
    io.b = [&](Val k, Val c) {
      Val kc = min(k, K - 1), cc = min(c, N - 1);
      Val ci = kc / taps, tap = kc % taps;
      Val b = cc / P, p = cc % P;
      Val ih = (p / Wo) * sh + (tap / KW) * dh - ph;
      Val iw = (p % Wo) * sw + (tap % KW) * dw - pw;
      Val inside = (k < K) & (c < N) & (ih < H) & (iw < W);
      Val at = ((b * Cin + ci) * H + min(ih, H - 1)) * W + min(iw, W - 1);
      return select(inside, Val(x[at]), kb.constant(t, 0));
    };
    io.store = [&](Val r, Val c, Val v) { y[((c / P) * M + r) * P + c % P] = v; };
    emit_tiled_gemm(kb, t, tl, M, N, K, tile_row * tl.tile_m, tile_col * tl.tile_n, lid, io);
  });
  return {kb.finish(), uint64_t(tiles_m) * tiles_n};
}

}  // namespace spire::lowering::heavy
