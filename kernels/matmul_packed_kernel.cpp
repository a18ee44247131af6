#include "kernels/matmul_packed_kernel.h"

#include <stdexcept>

#include <fmt/format.h>

#include "kernels/matmul_mma_kernel.h"
#include "kernels/tile_order.h"

namespace spire::lowering::heavy {

using namespace kir;

namespace {

constexpr uint32_t kTileShare = kWarp * kPackedShare;  // elements of one packed 16x16 tile
// A packing workgroup: 8 subgroups, a strip of 16 stored rows x 128 stored columns (8 tiles side by side), its rows
// padded by 16 bytes in workgroup memory (the fragment loads of neighbouring rows then fall in different banks).
constexpr uint32_t kStripTiles = 8, kStripWidth = kStripTiles * kMatrixTile, kStripLd = kStripWidth + 8;

MatmulTiling packed_tiling(uint32_t tm, uint32_t tn, uint32_t wm, uint32_t wn, uint32_t sets, uint32_t lookahead) {
  MatmulTiling t{tm, tn, kMatrixTile, 1, 1};
  t.warps_m = wm;
  t.warps_n = wn;
  t.stages = sets;
  t.lookahead = lookahead;
  return t;
}

uint32_t ceil_div(int64_t a, uint32_t b) { return index_u32((a + b - 1) / b, "packed matmul tiles"); }

// An operand's packed form: `outer_tiles` rows of tiles (whole blocks), each `k_stride` tiles long, of which the
// first `k_tiles` are multiplied (whole laps of the K loop; zeros past K) and the rest only read ahead.
struct PackedForm {
  uint32_t outer_tiles, k_tiles, k_stride;
};

PackedForm packed_form(const MatmulShape& s, const MatmulTiling& tl, bool b) {
  const uint32_t block = b ? tl.tile_n : tl.tile_m;
  const uint32_t outer_tiles = ceil_div(b ? s.n : s.m, block) * (block / kMatrixTile);
  const uint32_t k_tiles = ceil_div(ceil_div(s.k, kMatrixTile), tl.stages) * tl.stages;
  return {outer_tiles, k_tiles, k_tiles + tl.lookahead};
}

void check_packed_tiling(const MatmulShape& s, const MatmulTiling& tl) {
  if (!matmul_fits_packed(s, Type::F32))
    throw std::invalid_argument("matmul from packed operands: both operands must be stored as f16, or both as bf16, "
                                "in one batch");
  if (!tl.packed() || !tl.tensor_cores() || tl.tile_k != kMatrixTile || tl.tile_m % (tl.warps_m * kMatrixTile) ||
      tl.tile_n % (tl.warps_n * kMatrixTile) || tl.stages == 0 || tl.stages > 16 || tl.lookahead >= tl.stages ||
      tl.producers != 0)
    throw std::invalid_argument(fmt::format("matmul from packed operands: tiling '{}' needs whole 16x16 fragments per "
                                            "subgroup, K slices of 16, no copying subgroups and fewer slices ahead "
                                            "than fragment sets (at most 16)", tl.config().text()));
}

}  // namespace

bool matmul_fits_packed(const MatmulShape& s, Type t) { return matmul_fits_tensor_cores(s, t) && s.batch_count() == 1; }

std::optional<MatmulTiling> choose_matmul_packed_tiling(const MatmulShape& s, const Limits& limits) {
  if (!limits.cooperative_matrix || limits.ptx || limits.shared_bytes >= 64 * 1024 || limits.max_invocations < 256 ||
      !matmul_fits_packed(s, Type::F32))
    return std::nullopt;
  // At 2048^3 (256 blocks) the packing launches cost more than they save (0.089 ms against 0.068); from 4096^3 on
  // (1024 blocks) the product gains (0.480 against 0.563, 8192^3: 3.09 against 4.11).
  if (s.m < 128 || s.n < 128 || s.k < 256 || ((s.m + 127) / 128) * ((s.n + 127) / 128) < 1024) return std::nullopt;
  // 64x48 per subgroup (4 x 3 fragments): 12 products for every 7 fragments loaded, against 8 for 6 at 64x32. 64x64
  // (128 accumulator registers) left NVIDIA's compiler too few for fragments in flight and it spilled (bf16 8192^3
  // 4.3-5.0 ms). On the H100's vulkan:0, bf16 8192^3, product launch: 128x96 blocks of 2 x 2 subgroups, 8 sets, 2
  // ahead 2.76-2.92 ms (255 registers, no spills), 1 ahead 2.73-2.79, 3 ahead 3.02; 96x128 (48x64) 2.75-2.83;
  // 128x192 of 2 x 4 2.75-2.78; 48x48 2.88-2.96; every 64x32 tiling 3.12-3.36. N = 8192 pads to 86 blocks of 96 columns
  // (0.8% more products), which the extra reuse (about 10%) pays for. Where 96-column blocks would pad N by over 5%
  // more than 64-column ones (N = 200: 288 columns against 256), the 64x32 tiling that led before: 128x64 blocks,
  // 8 sets, 3 ahead.
  const int64_t in_96 = (s.n + 95) / 96 * 96, in_64 = (s.n + 63) / 64 * 64;
  if (in_96 * 100 > in_64 * 105) return packed_tiling(128, 64, 2, 2, 8, 3);
  return packed_tiling(128, 96, 2, 2, 8, 2);
}

std::vector<MatmulTiling> matmul_packed_candidates(const MatmulShape& s, const Limits& limits) {
  if (s.tf32) return {};  // packed shares are bf16 fragments' registers
  const std::optional<MatmulTiling> first = choose_matmul_packed_tiling(s, limits);
  if (!first) return {};
  std::vector<MatmulTiling> out{*first};
  // The tilings within 10% of the heuristic's on the H100 (the comment above), and 64x32 per subgroup.
  const uint32_t shapes[][4] = {{128, 96, 2, 2}, {96, 128, 2, 2}, {128, 192, 2, 4}, {96, 96, 2, 2}, {128, 64, 2, 2}};
  const uint32_t depths[][2] = {{8, 2}, {8, 1}, {8, 3}};
  for (const auto& sh : shapes)
    for (const auto& d : depths) {
      MatmulTiling t = packed_tiling(sh[0], sh[1], sh[2], sh[3], d[0], d[1]);
      if (t.invocations() <= limits.max_invocations && !(t == *first)) out.push_back(t);
    }
  return out;
}

uint64_t packed_operand_elements(const MatmulShape& s, const MatmulTiling& tl, bool b) {
  const PackedForm f = packed_form(s, tl, b);
  return uint64_t(f.outer_tiles) * f.k_stride * kTileShare;
}

HeavyKernel matmul_pack_kernel(const MatmulShape& s, const MatmulTiling& tl, bool b, bool async_copies) {
  check_packed_tiling(s, tl);
  const PackedForm form = packed_form(s, tl, b);
  // The operand as stored: rows x cols, K along the columns (k_inner) or the rows.
  const bool transposed = b ? s.b_transposed : s.a_transposed;
  const bool k_inner = b ? transposed : !transposed;
  const uint32_t outer = index_u32(b ? s.n : s.m, "packed matmul rows"), K = index_u32(s.k, "packed matmul depth");
  const uint32_t rows = k_inner ? outer : K, cols = k_inner ? K : outer;
  const uint32_t row_tiles = k_inner ? form.outer_tiles : form.k_tiles;
  const uint32_t col_tiles = k_inner ? form.k_tiles : form.outer_tiles;
  const uint32_t strips_across = (col_tiles + kStripTiles - 1) / kStripTiles;
  index_u32(int64_t(packed_operand_elements(s, tl, b)), "packed matmul operand elements");
  // 16-byte copies where every stored row starts on 16 bytes (so a piece of 8 lies wholly inside or outside it).
  const bool copies = async_copies && cols % 8 == 0;
  const Type h = b ? *s.b_half : *s.a_half;
  const std::string name = fmt::format("matmul_pack_{}_{}x{}{}_t{}x{}_s{}_l{}{}", b ? "b" : "a", rows, cols,
                                       transposed ? "_t" : "", tl.tile_m, tl.tile_n, tl.stages, tl.lookahead,
                                       copies ? "_c" : "");
  if (outer == 0 || K == 0) return empty_result(name);
  KernelBuilder kb(name, kStripTiles * kWarp);
  Buf src = kb.buffer("src", h, Access::Read);
  Buf packed = kb.buffer("packed", h, Access::Write);
  Shared strip = kb.shared("strip", h, kMatrixTile * kStripLd);
  // A fragment's element (r, c) is A's (row, k) or B's (k, column): column-major where the stored rows are its
  // columns (A^T's rows are k, B^T's are columns).
  Fragment f = kb.fragment("f", b ? MatrixUse::B : MatrixUse::A, h, b ? k_inner : !k_inner);
  Val group = kb.group_id(), lid = kb.local_id(), warp = kb.subgroup_id(), lane = kb.subgroup_local_id();
  kb.if_(group < row_tiles * strips_across, [&] {
    Val strip_row = group / strips_across, strip_col = group % strips_across;
    // Each invocation stages 8 consecutive elements of one stored row: zeros outside the operand.
    Val r = lid / (kStripWidth / 8), piece = (lid % (kStripWidth / 8)) * 8;
    Val row = strip_row * kMatrixTile + r, col = strip_col * kStripWidth + piece;
    if (copies) {
      kb.copy_to_shared(strip, r * kStripLd + piece, src, row * cols + col, (row < rows) & (col < cols));
      kb.copy_commit();
      kb.copy_wait(0);
    } else {
      for (uint32_t j = 0; j < 8; ++j)
        kb.if_else((row < rows) & (col + j < cols),
                   [&] { strip[r * kStripLd + piece + j] = src[row * cols + col + j]; },
                   [&] { strip[r * kStripLd + piece + j] = cast(kb.f32(0), h); });
    }
    kb.barrier();
    // Subgroup w packs the strip's tile w, where the operand's padded form has one (uniform across the subgroup).
    Val tile_col = strip_col * kStripTiles + warp;
    kb.if_(tile_col < col_tiles, [&] {
      kb.matrix_load(f, strip, warp * kMatrixTile, kStripLd);
      Val o = k_inner ? strip_row : tile_col, kt = k_inner ? tile_col : strip_row;
      kb.matrix_store_packed(packed, (o * form.k_stride + kt) * kTileShare + lane * kPackedShare, f);
    });
  });
  return {kb.finish(), uint64_t(row_tiles) * strips_across};
}

HeavyKernel matmul_packed_kernel(const MatmulShape& s, const MatmulTiling& tl) {
  check_packed_tiling(s, tl);
  const PackedForm fa = packed_form(s, tl, false), fb = packed_form(s, tl, true);
  const uint32_t M = index_u32(s.m, "matmul rows"), N = index_u32(s.n, "matmul columns");
  const uint32_t tiles_m = ceil_div(M, tl.tile_m), tiles_n = ceil_div(N, tl.tile_n);
  const uint32_t fm = tl.tile_m / tl.warps_m / kMatrixTile, fn = tl.tile_n / tl.warps_n / kMatrixTile;
  const uint32_t sets = tl.stages, ahead = tl.lookahead;
  const Type h = *s.a_half;
  const std::string name = fmt::format("{}_t{}x{}_w{}x{}_packed_s{}_l{}_mma_f32", matmul_checked_name(s), tl.tile_m,
                                       tl.tile_n, tl.warps_m, tl.warps_n, sets, ahead);
  if (M == 0 || N == 0) return empty_result(name);
  KernelBuilder kb(name, tl.invocations());
  Buf pa = kb.buffer("a_packed", h, Access::Read);
  Buf pb = kb.buffer("b_packed", h, Access::Read);
  Buf C = kb.buffer("c", Type::F32, Access::Write);
  Shared c_stage = kb.shared("c_stage", Type::F32, tl.warps_m * tl.warps_n * kMatrixTile * kMatrixTile);
  std::vector<Fragment> acc;
  std::vector<std::vector<Fragment>> a(sets), b(sets);
  for (uint32_t i = 0; i < fm * fn; ++i)
    acc.push_back(kb.fragment(fmt::format("acc{}", i), MatrixUse::Accumulator, Type::F32));
  for (uint32_t set = 0; set < sets; ++set) {
    for (uint32_t i = 0; i < fm; ++i) a[set].push_back(kb.fragment(fmt::format("a{}_{}", set, i), MatrixUse::A, h));
    for (uint32_t j = 0; j < fn; ++j) b[set].push_back(kb.fragment(fmt::format("b{}_{}", set, j), MatrixUse::B, h));
  }
  Val group = kb.group_id(), warp = kb.subgroup_id(), lane = kb.subgroup_local_id();
  const TilePosition at = banded_tile_position(kb, group, tiles_m, tiles_n);
  Val warp_row = warp / tl.warps_n, warp_col = warp % tl.warps_n;
  // Uniform across the workgroup (a folded grid's extra workgroups skip everything, barriers included).
  kb.if_(at.batch < 1, [&] {
    Val m_tile0 = at.tile_row * (tl.tile_m / kMatrixTile) + warp_row * fm;
    Val n_tile0 = at.tile_col * (tl.tile_n / kMatrixTile) + warp_col * fn;
    for (Fragment f : acc) kb.matrix_fill(f, kb.f32(0));
    // This lane's share of tile (outer0 + i, kt): base + kt * kTileShare + i * (k_stride * kTileShare). Written as
    // (tile * 32 + lane) * 8, NVIDIA's compiler keeps every load a 32-bit offset from the binding; as tile * 256 +
    // lane * 8 it built a 64-bit address for a third of them (bf16 8192^3: 3.54 ms against 3.25).
    Val a_base = (m_tile0 * (fa.k_stride * kWarp) + lane) * kPackedShare;
    Val b_base = (n_tile0 * (fb.k_stride * kWarp) + lane) * kPackedShare;
    auto load = [&](uint32_t set, Val kt) {
      Val a_at = a_base + kt * kTileShare, b_at = b_base + kt * kTileShare;
      for (uint32_t i = 0; i < fm; ++i) kb.matrix_load_packed(a[set][i], pa, a_at + i * (fa.k_stride * kTileShare));
      for (uint32_t j = 0; j < fn; ++j) kb.matrix_load_packed(b[set][j], pb, b_at + j * (fb.k_stride * kTileShare));
    };
    auto multiply = [&](uint32_t set) {
      for (uint32_t i = 0; i < fm; ++i)
        for (uint32_t j = 0; j < fn; ++j) kb.matrix_mul_add(acc[i * fn + j], a[set][i], b[set][j], acc[i * fn + j]);
    };
    // Slice kt's fragments go to set kt % sets, loaded `ahead` slices before it is multiplied; the last laps read the
    // padding past the multiplied tiles.
    for (uint32_t slice = 0; slice < ahead; ++slice) load(slice, kb.u32(slice));
    kb.for_(kb.u32(0), kb.u32(fa.k_tiles), kb.u32(sets), [&](Val kt) {
      for (uint32_t set = 0; set < sets; ++set) {
        load((set + ahead) % sets, kt + (set + ahead));
        multiply(set);
      }
    });
    // Each accumulator leaves through the subgroup's own 16x16 f32 tile of workgroup memory.
    Val row0 = at.tile_row * tl.tile_m + warp_row * (fm * kMatrixTile);
    Val col0 = at.tile_col * tl.tile_n + warp_col * (fn * kMatrixTile);
    const uint32_t stage = kMatrixTile * kMatrixTile;
    for (uint32_t i = 0; i < fm; ++i)
      for (uint32_t j = 0; j < fn; ++j) {
        kb.barrier();
        kb.matrix_store(c_stage, warp * stage, kMatrixTile, acc[i * fn + j]);
        kb.barrier();
        for (uint32_t e0 = 0; e0 < stage; e0 += kWarp) {
          Val e = lane + e0;
          Val row = row0 + i * kMatrixTile + e / kMatrixTile, col = col0 + j * kMatrixTile + e % kMatrixTile;
          kb.if_((row < M) & (col < N), [&] { C[row * N + col] = Val(c_stage[warp * stage + e]); });
        }
      }
  });
  return {kb.finish(), uint64_t(tiles_m) * tiles_n};
}

}  // namespace spire::lowering::heavy
