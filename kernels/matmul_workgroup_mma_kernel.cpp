#include "kernels/matmul_workgroup_mma_kernel.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/matmul_mma_kernel.h"
#include "kernels/tile_order.h"

namespace spire::lowering::heavy {

using namespace kir;

namespace {

MatmulTiling workgroup_tiling(uint32_t tile_m, uint32_t tile_n, uint32_t tile_k, uint32_t unroll) {
  MatmulTiling t{tile_m, tile_n, tile_k, 1, 1};
  t.workgroup_matrix = true;
  t.unroll = unroll;
  return t;
}

// The deepest unroll of 4, 2 or 1 that divides the product's K slices (no remainder loop).
uint32_t unroll_for(const MatmulShape& s, uint32_t tile_k, uint32_t most) {
  const int64_t slices = (s.k + tile_k - 1) / tile_k;
  for (uint32_t u = most; u > 1; u /= 2)
    if (slices % u == 0) return u;
  return 1;
}

}  // namespace

bool matmul_fits_workgroup_mma(const MatmulShape& s, Type t) {
  if (s.tf32 || !matmul_fits_tensor_cores(s, t) || s.m == 0 || s.n == 0 || s.k == 0 || s.batch_count() == 0) return false;
  for (int64_t st : s.a_batch_strides)
    if (st % 8) return false;
  for (int64_t st : s.b_batch_strides)
    if (st % 8) return false;
  return s.batch_count() == 1 || (s.m * s.n) % 4 == 0;
}

MatmulTiling choose_matmul_workgroup_mma_tiling(const MatmulShape& s) {
  auto blocks = [&](int64_t tm, int64_t tn) { return s.batch_count() * ((s.m + tm - 1) / tm) * ((s.n + tn - 1) / tn); };
  // 128x256x32 without unrolling was the fastest tiling on an H200's vulkan:0 at 4096 and 8192 (unrolled 4 deep, the
  // driver's code took up to twice as long: docs/PERFORMANCE.md).
  if (s.m >= 128 && s.n >= 256 && blocks(128, 256) >= 128) return workgroup_tiling(128, 256, 32, 1);
  if (s.m >= 128 && s.n >= 128 && blocks(128, 128) >= 128) return workgroup_tiling(128, 128, 32, 1);
  return workgroup_tiling(64, 64, 32, 1);
}

std::vector<MatmulTiling> matmul_workgroup_mma_candidates(const MatmulShape& s) {
  std::vector<MatmulTiling> out{choose_matmul_workgroup_mma_tiling(s)};
  const uint32_t shapes[][2] = {{64, 64}, {128, 64}, {64, 128}, {128, 128}, {256, 128}, {128, 256}, {256, 256}};
  for (const auto& sh : shapes)
    for (uint32_t k : {16u, 32u, 64u})
      for (uint32_t unroll : {1u, 4u}) {
        // A block more than twice the (rounded up) extent only adds masked work.
        if (sh[0] > 2 * std::max<int64_t>(s.m, 32) || sh[1] > 2 * std::max<int64_t>(s.n, 32)) continue;
        MatmulTiling t = workgroup_tiling(sh[0], sh[1], k, unroll_for(s, k, unroll));
        if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
      }
  return out;
}

HeavyKernel matmul_workgroup_mma_kernel(const MatmulShape& s, const MatmulTiling& tl) {
  if (!matmul_fits_workgroup_mma(s, Type::F32))
    throw std::invalid_argument("matmul on workgroup matrices: both operands must be stored as f16, or both as bf16, "
                                "and every batch must start on 16 bytes");
  if (!tl.workgroup_matrix || tl.tile_m % 32 || tl.tile_n % 32 || tl.tile_k % 16 || tl.tile_m == 0 || tl.tile_n == 0 ||
      tl.tile_k == 0 || tl.tile_m > kWorkgroupMatrixMax || tl.tile_n > kWorkgroupMatrixMax ||
      tl.tile_k > kWorkgroupMatrixMax || tl.unroll < 1 || tl.unroll > 8)
    throw std::invalid_argument(fmt::format("matmul on workgroup matrices: tiling '{}' is not a block of multiples of "
                                            "32 by 32 with slices of multiples of 16, unrolled 1 to 8 deep",
                                            tl.config().text()));
  const std::string name =
      matmul_checked_name(s) + fmt::format("_t{}x{}x{}_u{}_workgroup_f32", tl.tile_m, tl.tile_n, tl.tile_k, tl.unroll);
  const Type h = *s.a_half;
  const uint32_t M = uint32_t(s.m), K = uint32_t(s.k), N = uint32_t(s.n), batches = uint32_t(s.batch_count());
  const uint32_t tiles_m = (M + tl.tile_m - 1) / tl.tile_m, tiles_n = (N + tl.tile_n - 1) / tl.tile_n;
  const uint32_t k_tiles = (K + tl.tile_k - 1) / tl.tile_k;

  KernelBuilder kb(name, tl.invocations());
  Buf A = kb.buffer("a", h, Access::Read);
  Buf B = kb.buffer("b", h, Access::Read);
  Buf C = kb.buffer("c", Type::F32, Access::Write);
  // A transposed operand is read through a transposing view (kernel.h's column-major workgroup matrix).
  Fragment acc = kb.workgroup_matrix("acc", MatrixUse::Accumulator, Type::F32, tl.tile_m, tl.tile_n);
  Fragment a = kb.workgroup_matrix("a", MatrixUse::A, h, tl.tile_m, tl.tile_k, s.a_transposed);
  Fragment b = kb.workgroup_matrix("b", MatrixUse::B, h, tl.tile_k, tl.tile_n, s.b_transposed);

  const TilePosition at = banded_tile_position(kb, kb.group_id(), tiles_m, tiles_n);
  // Uniform across the workgroup, as workgroup matrices need (a folded grid's extra workgroups skip everything).
  kb.if_(at.batch < batches, [&] {
    Val a_base = matmul_batch_offset(kb, s, at.batch, s.a_batch_strides);
    Val b_base = matmul_batch_offset(kb, s, at.batch, s.b_batch_strides);
    Val c_base = at.batch * (M * N);
    Val row0 = at.tile_row * tl.tile_m, col0 = at.tile_col * tl.tile_n;
    Val m = kb.u32(M), k = kb.u32(K), n = kb.u32(N);
    kb.matrix_fill(acc, kb.f32(0));
    auto slice = [&](Val k0) {
      kb.matrix_load_tensor(a, A, a_base, row0, k0, m, k);
      kb.matrix_load_tensor(b, B, b_base, k0, col0, k, n);
      kb.matrix_mul_add(acc, a, b, acc);
    };
    // k_tiles is a multiple of the unroll (unroll_for); a tiling from elsewhere that is not finishes slice by slice.
    const uint32_t unrolled = k_tiles / tl.unroll * tl.unroll;
    if (unrolled > 0)
      kb.for_(kb.u32(0), kb.u32(unrolled * tl.tile_k), kb.u32(tl.unroll * tl.tile_k), [&](Val k0) {
        for (uint32_t u = 0; u < tl.unroll; ++u) slice(k0 + u * tl.tile_k);
      });
    for (uint32_t kt = unrolled; kt < k_tiles; ++kt) slice(kb.u32(kt * tl.tile_k));
    kb.matrix_store_tensor(C, c_base, row0, col0, m, n, acc);
  });
  return {kb.finish(), uint64_t(batches) * tiles_m * tiles_n};
}

}  // namespace spire::lowering::heavy
