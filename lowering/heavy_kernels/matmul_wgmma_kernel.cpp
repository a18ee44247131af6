#include "lowering/heavy_kernels/matmul_wgmma_kernel.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "lowering/heavy_kernels/matmul_mma_kernel.h"
#include "lowering/heavy_kernels/tile_order.h"

namespace spire::lowering::heavy {

using namespace kir;

namespace {

constexpr uint32_t kRows = kWarpgroupRows;  // 64 rows per warpgroup
constexpr uint32_t kDepth = 16;             // K of one multiply
constexpr uint32_t kBlock = 64;             // elements of an 8x8 block
constexpr uint32_t kChunk = 8;              // elements of a 16-byte copy (one block row)

MatmulTiling wgmma_tiling(uint32_t tile_m, uint32_t tile_n, uint32_t tile_k, uint32_t stages) {
  MatmulTiling t{tile_m, tile_n, tile_k, 1, 1};
  t.warpgroups = tile_m / kRows;
  t.stages = stages;
  return t;
}

// A workgroup gets at most 64K registers (every GPU with wgmma), and each invocation holds tile_n / 2 accumulators
// plus about 40 others (addresses, loop state): ptxas refuses 4 warpgroups of 256 columns (it asks for 154 each).
constexpr uint32_t kRegisterFile = 65536, kOtherRegisters = 40;

bool fits(const MatmulTiling& t, const Limits& limits) {
  return wgmma_shared_bytes(t) <= limits.shared_bytes && t.invocations() <= limits.max_invocations &&
         uint64_t(t.invocations()) * (t.tile_n / 2 + kOtherRegisters) <= kRegisterFile;
}

}  // namespace

uint64_t wgmma_shared_bytes(const MatmulTiling& t) { return uint64_t(t.stages) * (t.tile_m + t.tile_n) * t.tile_k * 2; }

bool matmul_fits_warpgroup_mma(const MatmulShape& s, Type t, const Limits& limits) {
  // 16-byte copies along each operand's contiguous direction (and batches starting on 16 bytes).
  const bool a_rows = (s.a_transposed ? s.m : s.k) % kChunk == 0, b_rows = (s.b_transposed ? s.k : s.n) % kChunk == 0;
  return limits.warpgroup_matrix && limits.async_copy && matmul_fits_tensor_cores(s, t) && a_rows && b_rows &&
         fits(wgmma_tiling(64, 64, 32, 3), limits);
}

MatmulTiling choose_matmul_wgmma_tiling(const MatmulShape& s, const Limits& limits) {
  auto blocks = [&](int64_t tm, int64_t tn) { return s.batch_count() * ((s.m + tm - 1) / tm) * ((s.n + tn - 1) / tn); };
  auto deepest = [&](uint32_t tm, uint32_t tn, uint32_t tk) -> std::optional<MatmulTiling> {
    for (uint32_t stages = 4; stages >= 3; --stages)
      if (MatmulTiling t = wgmma_tiling(tm, tn, tk, stages); fits(t, limits)) return t;
    return std::nullopt;
  };
  // About one workgroup per core (132 on an H100) for the large blocks, which read the fewest bytes per product.
  if (s.m >= 128 && s.n >= 256 && blocks(128, 256) >= 128)
    if (auto t = deepest(128, 256, 64)) return *t;
  if (s.m >= 128 && s.n >= 128 && blocks(128, 128) >= 128)
    if (auto t = deepest(128, 128, 64)) return *t;
  if (s.m >= 64 && s.n >= 128 && blocks(64, 128) >= 64)
    if (auto t = deepest(64, 128, 64)) return *t;
  return deepest(64, 64, 64).value_or(wgmma_tiling(64, 64, 32, 3));
}

std::vector<MatmulTiling> matmul_wgmma_candidates(const MatmulShape& s, const Limits& limits) {
  std::vector<MatmulTiling> out{choose_matmul_wgmma_tiling(s, limits)};
  for (uint32_t tm : {64u, 128u, 192u, 256u})
    for (uint32_t tn : {64u, 128u, 192u, 256u})
      for (uint32_t tk : {32u, 64u})
        for (uint32_t stages = 3; stages <= 8; ++stages) {
          MatmulTiling t = wgmma_tiling(tm, tn, tk, stages);
          if (!fits(t, limits)) continue;
          // A block more than twice the (rounded up) extent only adds masked work.
          if (tm > 2 * std::max<int64_t>(s.m, kRows) || tn > 2 * std::max<int64_t>(s.n, 64)) continue;
          if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
        }
  return out;
}

namespace {

// How one operand moves into its stage: mn_extent (tile_m or tile_n) x tile_k elements per slice, in 8x8 blocks laid
// out so that consecutive invocations copy consecutive 16 bytes of workgroup memory (no bank conflicts) while eight of
// them read one 16-byte piece from each of eight rows of the buffer, and the next eight the pieces beside those: a
// K-contiguous operand's blocks run along K first (k_block_stride 64), an MN-contiguous one's along M or N. (Measured
// on an H100: blocks padded to 144 bytes apart so that a warp reads whole 128-byte rows of the buffer, conflict-free,
// ran 10% slower: the tensor cores then read blocks that straddle 128-byte lines.)
struct OperandStaging {
  const Buf* buffer;
  Shared tile;
  uint32_t mn_extent;
  bool k_contiguous;
  uint32_t k_block_stride, mn_block_stride;
  uint32_t k_step;  // buffer elements between neighbouring k
  bool edges;       // some slice reaches past the product
  // (mn, k) of the slice at k0 = 0 -> its buffer element, and whether mn lies in the product.
  std::function<Val(Val mn, Val k)> offset;
  std::function<Val(Val mn)> in_range;
};

struct CopyItem {
  Val to, offset, kpos;
  std::optional<Val> in_range, present;
};

}  // namespace

HeavyKernel matmul_wgmma_kernel(const MatmulShape& s, const MatmulTiling& tl) {
  if (!matmul_fits_tensor_cores(s, Type::F32))
    throw std::invalid_argument("matmul on warpgroup MMA: both operands must be stored as f16, or both as bf16");
  if ((s.a_transposed ? s.m : s.k) % kChunk || (s.b_transposed ? s.k : s.n) % kChunk)
    throw std::invalid_argument("matmul on warpgroup MMA: each operand's rows must hold a multiple of 8 elements");
  if (!tl.warpgroup_mma() || tl.tile_m != tl.warpgroups * kRows || tl.tile_n % 8 || tl.tile_n > kWarpgroupMaxColumns ||
      tl.tile_n == 0 || tl.tile_k % kDepth || tl.tile_k == 0 || tl.stages < 3 || tl.stages > 8 || tl.splits != 1)
    throw std::invalid_argument(fmt::format("matmul on warpgroup MMA: tiling '{}' is not one (64 rows per warpgroup, "
                                            "8 to 256 columns, K slices of 16s, 3 to 8 stages)", tl.config().text()));
  const std::string name = matmul_checked_name(s) + fmt::format("_t{}x{}x{}_wg{}_s{}_wgmma_f32", tl.tile_m, tl.tile_n,
                                                                tl.tile_k, tl.warpgroups, tl.stages);
  const Type h = *s.a_half;
  const uint32_t M = uint32_t(s.m), K = uint32_t(s.k), N = uint32_t(s.n), batches = uint32_t(s.batch_count());
  if (M == 0 || N == 0 || batches == 0) return empty_result(name);
  const uint32_t tiles_m = (M + tl.tile_m - 1) / tl.tile_m, tiles_n = (N + tl.tile_n - 1) / tl.tile_n;
  const uint32_t k_tiles = (K + tl.tile_k - 1) / tl.tile_k;
  const uint32_t threads = tl.invocations(), S = tl.stages;
  const uint32_t a_elems = tl.tile_m * tl.tile_k, b_elems = tl.tile_n * tl.tile_k;

  KernelBuilder kb(name, threads);
  Buf A = kb.buffer("a", h, Access::Read);
  Buf B = kb.buffer("b", h, Access::Read);
  Buf C = kb.buffer("c", Type::F32, Access::Write);
  Shared a_tile = kb.shared("a_tile", h, S * a_elems);
  Shared b_tile = kb.shared("b_tile", h, S * b_elems);
  Fragment acc = kb.warpgroup_accumulator("acc", tl.tile_n);

  Val lid = kb.local_id();
  const TilePosition at = banded_tile_position(kb, kb.group_id(), tiles_m, tiles_n);
  // Uniform across the workgroup (a folded grid's extra workgroups skip everything, barriers included).
  kb.if_(at.batch < batches, [&] {
    Val a_base = matmul_batch_offset(kb, s, at.batch, s.a_batch_strides);
    Val b_base = matmul_batch_offset(kb, s, at.batch, s.b_batch_strides);
    Val row0 = at.tile_row * tl.tile_m, col0 = at.tile_col * tl.tile_n;
    kb.matrix_fill(acc, kb.f32(0));

    auto staging = [&](const Buf* buf, Shared tile, uint32_t extent, bool k_contiguous, uint32_t k_step, bool edges,
                       std::function<Val(Val, Val)> offset, std::function<Val(Val)> in_range) {
      const uint32_t k_stride = k_contiguous ? kBlock : extent * kChunk;
      const uint32_t mn_stride = k_contiguous ? tl.tile_k * kChunk : kBlock;
      return OperandStaging{buf, tile, extent, k_contiguous, k_stride, mn_stride, k_step, edges, std::move(offset),
                            std::move(in_range)};
    };
    // A is [m][k] (K-contiguous) or, transposed, [k][m]; B is [k][n] (N-contiguous) or, transposed, [n][k].
    const bool a_edges = M % tl.tile_m || K % tl.tile_k, b_edges = N % tl.tile_n || K % tl.tile_k;
    OperandStaging a_st = s.a_transposed
        ? staging(&A, a_tile, tl.tile_m, false, M, a_edges, [&](Val m, Val k) { return a_base + k * M + (row0 + m); },
                  [&](Val m) { return row0 + m < M; })
        : staging(&A, a_tile, tl.tile_m, true, 1, a_edges, [&](Val m, Val k) { return a_base + (row0 + m) * K + k; },
                  [&](Val m) { return row0 + m < M; });
    OperandStaging b_st = s.b_transposed
        ? staging(&B, b_tile, tl.tile_n, true, 1, b_edges, [&](Val n, Val k) { return b_base + (col0 + n) * K + k; },
                  [&](Val n) { return col0 + n < N; })
        : staging(&B, b_tile, tl.tile_n, false, N, b_edges, [&](Val n, Val k) { return b_base + k * N + (col0 + n); },
                  [&](Val n) { return col0 + n < N; });

    // What one invocation copies of each slice, worked out once before the K loop: chunk c goes to stage element
    // 8 c (see OperandStaging), so its row within the block is c % 8.
    auto items_of = [&](const OperandStaging& st) {
      const uint32_t chunks = st.mn_extent * tl.tile_k / kChunk;
      std::vector<CopyItem> out;
      for (uint32_t base = 0; base < chunks; base += threads) {
        Val c = lid + base;
        Val r = c % kChunk;
        Val mn, k;
        if (st.k_contiguous) {
          mn = (c / tl.tile_k) * kChunk + r;
          k = ((c / kChunk) % (tl.tile_k / kChunk)) * kChunk;
        } else {
          mn = ((c / kChunk) % (st.mn_extent / kChunk)) * kChunk;
          k = (c / st.mn_extent) * kChunk + r;
        }
        CopyItem it{c * kChunk, st.offset(mn, k), k, std::nullopt, std::nullopt};
        if (st.edges) it.in_range = st.in_range(mn);
        if (base + threads > chunks) it.present = c < chunks;
        out.push_back(it);
      }
      return out;
    };
    const std::vector<CopyItem> a_items = items_of(a_st), b_items = items_of(b_st);
    auto stage = [&](const OperandStaging& st, const std::vector<CopyItem>& items, Val k0, Val slot_at) {
      for (const CopyItem& it : items) {
        auto one = [&] {
          Val valid = it.in_range ? *it.in_range & (k0 + it.kpos < K) : kb.boolean(true);
          kb.copy_to_shared(st.tile, slot_at + it.to, *st.buffer, it.offset + (st.k_step == 1 ? k0 : k0 * st.k_step),
                            valid);
        };
        if (it.present) kb.if_(*it.present, one);
        else one();
      }
    };
    auto stage_slice = [&](Val slice, Val slot) {
      stage(a_st, a_items, slice * tl.tile_k, slot * a_elems);
      stage(b_st, b_items, slice * tl.tile_k, slot * b_elems);
    };
    // Warpgroup w multiplies rows 64 w .. 64 w + 63 of the block: 8 blocks of A along M.
    Val warpgroup = lid / kWarpgroupInvocations;
    Val a_rows = warpgroup * (kRows / kChunk * a_st.mn_block_stride);
    auto multiply = [&](Val slot) {
      for (uint32_t kk = 0; kk < tl.tile_k; kk += kDepth) {
        const uint32_t kb_a = kk / kChunk * a_st.k_block_stride, kb_b = kk / kChunk * b_st.k_block_stride;
        kb.warpgroup_mul_add(acc, {a_tile, slot * a_elems + a_rows + kb_a, a_st.k_block_stride, a_st.mn_block_stride, !a_st.k_contiguous},
                             {b_tile, slot * b_elems + kb_b, b_st.k_block_stride, b_st.mn_block_stride, !b_st.k_contiguous});
      }
    };

    // A pipeline of S stages with one batch of multiplies in flight: round kt waits for slice kt's copies (at most
    // S - 3 younger batches fly), and its barrier shows the slice to every warpgroup and tells the round that every
    // warpgroup has finished multiplying slice kt - 2 (each waited for it at the end of round kt - 1), whose stage it
    // refills with slice kt + S - 2. It then multiplies slice kt, leaving those multiplies in flight while it waits for
    // slice kt - 1's. An empty batch of copies past the end keeps the count.
    for (uint32_t p = 0; p + 2 < S; ++p) {
      if (p < k_tiles) stage_slice(kb.u32(p), kb.u32(p));
      kb.copy_commit();
    }
    kb.for_(kb.u32(0), kb.u32(k_tiles), [&](Val kt) {
      kb.copy_wait(S - 3);
      kb.barrier();
      Val ahead = kt + (S - 2);
      kb.if_(ahead < k_tiles, [&] { stage_slice(ahead, ahead % S); });
      kb.copy_commit();
      multiply(kt % S);
      kb.warpgroup_commit();
      kb.warpgroup_wait(1);
    });
    kb.warpgroup_wait(0);
    kb.copy_wait(0);  // only empty batches are left

    // Invocation t of warpgroup w holds rows 16 (t / 32) + (t % 32) / 4 (+ 8) and columns 2 (t % 4) (+ 1) of every
    // 8 columns (kernel.h's accumulator layout).
    Val t = lid % kWarpgroupInvocations;
    Val r = row0 + warpgroup * kRows + (t / 32) * 16 + (t % 32) / 4;
    Val c = col0 + (t % 4) * 2;
    Val first = at.batch * (M * N) + r * N + c;
    const bool edges = M % tl.tile_m || N % tl.tile_n;
    for (uint32_t i = 0; i < tl.tile_n / 2; ++i) {
      const uint32_t dr = 8 * ((i / 2) % 2), dc = 8 * (i / 4) + i % 2;
      auto store = [&] { C[first + (dr * N + dc)] = kb.matrix_element(acc, i); };
      if (edges) kb.if_((r + dr < M) & (c + dc < N), store);
      else store();
    }
  });
  uint64_t groups = uint64_t(batches) * tiles_m * tiles_n;
  return {kb.finish(), groups};
}

}  // namespace spire::lowering::heavy
