#include "kernels/matmul_wgmma_kernel.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/matmul_mma_kernel.h"
#include "kernels/tile_order.h"

namespace spire::lowering::heavy {

using namespace kir;

namespace {

constexpr uint32_t kRows = kWarpgroupRows;  // 64 rows per consumer warpgroup
constexpr uint32_t kDepth = 16;             // K of one multiply
constexpr uint32_t kSlice = 64;             // K per stage: one 128-byte swizzled row of 16-bit elements
constexpr uint32_t kSwizzleRow = 64;        // elements of a 128-byte row
constexpr uint32_t kRowGroup = 8 * kSwizzleRow;       // 8 rows: the swizzle's 1024-byte period
constexpr uint32_t kBox = kSwizzleRow * kSlice;        // an MN-major copy: 64 (m or n) x 64 (k)
constexpr uint32_t kChunk = 8;              // elements in 16 bytes: tensor maps' stride unit

MatmulTiling wgmma_tiling(uint32_t tile_m, uint32_t tile_n, uint32_t stages) {
  MatmulTiling t{tile_m, tile_n, kSlice, 1, 1};
  t.warpgroups = tile_m / kRows;
  t.stages = stages;
  return t;
}

// A workgroup gets at most 64K registers (every GPU with wgmma), and ptxas gives every invocation as many as the
// busiest needs: tile_n / 2 accumulators plus about 40 others (addresses, loop state).
constexpr uint32_t kRegisterFile = 65536, kOtherRegisters = 40;

bool fits(const MatmulTiling& t, const Limits& limits) {
  return wgmma_shared_bytes(t) <= limits.shared_bytes && t.invocations() <= limits.max_invocations &&
         uint64_t(t.invocations()) * (t.tile_n / 2 + kOtherRegisters) <= kRegisterFile;
}

// The one element stride between an operand's batches, if its batches are evenly spaced along the result's linear
// batch index (0: every batch reads the same matrix); nullopt where a tensor map cannot express them (a broadcast
// along some batch dimensions but not others).
std::optional<int64_t> batch_stride(const MatmulShape& s, const std::vector<int64_t>& strides) {
  if (strides.empty() || std::all_of(strides.begin(), strides.end(), [](int64_t x) { return x == 0; })) return 0;
  int64_t expect = strides.back();
  for (size_t d = strides.size(); d-- > 0;) {
    if (s.batch[d] > 1 && strides[d] != expect) return std::nullopt;
    expect *= s.batch[d];
  }
  return strides.back();
}

}  // namespace

uint64_t wgmma_shared_bytes(const MatmulTiling& t) {
  return uint64_t(t.stages) * (t.tile_m + t.tile_n) * kSlice * 2 + uint64_t(t.stages) * 2 * 8;
}

bool matmul_fits_warpgroup_mma(const MatmulShape& s, Type t, const Limits& limits) {
  const bool a_rows = (s.a_transposed ? s.m : s.k) % kChunk == 0, b_rows = (s.b_transposed ? s.k : s.n) % kChunk == 0;
  // (TF32 operands: the wmma kernel; wgmma's tf32 form is not written yet.)
  return limits.warpgroup_matrix && limits.tensor_copy && !s.tf32 && matmul_fits_tensor_cores(s, t) && s.m > 0 && s.n > 0 &&
         s.k > 0 && a_rows && b_rows && batch_stride(s, s.a_batch_strides) && batch_stride(s, s.b_batch_strides) &&
         fits(wgmma_tiling(64, 64, 2), limits);
}

MatmulTiling choose_matmul_wgmma_tiling(const MatmulShape& s, const Limits& limits) {
  auto blocks = [&](int64_t tm, int64_t tn) { return s.batch_count() * ((s.m + tm - 1) / tm) * ((s.n + tn - 1) / tn); };
  auto deepest = [&](uint32_t tm, uint32_t tn, uint32_t most) -> std::optional<MatmulTiling> {
    for (uint32_t stages = most; stages >= 2; --stages)
      if (MatmulTiling t = wgmma_tiling(tm, tn, stages); fits(t, limits)) return t;
    return std::nullopt;
  };
  // About one workgroup per core (132 on an H100) for the large blocks, which read the fewest bytes per product.
  if (s.m >= 128 && s.n >= 256 && blocks(128, 256) >= 128)
    if (auto t = deepest(128, 256, 4)) return *t;
  if (s.m >= 128 && s.n >= 128 && blocks(128, 128) >= 128)
    if (auto t = deepest(128, 128, 6)) return *t;
  if (s.m >= 64 && s.n >= 128 && blocks(64, 128) >= 64)
    if (auto t = deepest(64, 128, 6)) return *t;
  // Small blocks leave most of the shared memory free; on an H100 the d768 MLP-down product (512x3072x768) ran 30%
  // faster 8 stages deep than 6 (docs/PERFORMANCE.md).
  return deepest(64, 64, 8).value_or(wgmma_tiling(64, 64, 2));
}

std::vector<MatmulTiling> matmul_wgmma_candidates(const MatmulShape& s, const Limits& limits) {
  std::vector<MatmulTiling> out{choose_matmul_wgmma_tiling(s, limits)};
  for (uint32_t tm : {64u, 128u, 192u, 256u})
    for (uint32_t tn : {64u, 128u, 192u, 256u})
      for (uint32_t stages = 2; stages <= 8; ++stages) {
        MatmulTiling t = wgmma_tiling(tm, tn, stages);
        if (!fits(t, limits)) continue;
        // A block more than twice the (rounded up) extent only adds masked work.
        if (tm > 2 * std::max<int64_t>(s.m, kRows) || tn > 2 * std::max<int64_t>(s.n, 64)) continue;
        if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
      }
  return out;
}

HeavyKernel matmul_wgmma_kernel(const MatmulShape& s, const MatmulTiling& tl) {
  if (!matmul_fits_tensor_cores(s, Type::F32))
    throw std::invalid_argument("matmul on warpgroup MMA: both operands must be stored as f16, or both as bf16");
  if ((s.a_transposed ? s.m : s.k) % kChunk || (s.b_transposed ? s.k : s.n) % kChunk)
    throw std::invalid_argument("matmul on warpgroup MMA: each operand's rows must hold a multiple of 8 elements");
  const std::optional<int64_t> a_step = batch_stride(s, s.a_batch_strides), b_step = batch_stride(s, s.b_batch_strides);
  if (!a_step || !b_step)
    throw std::invalid_argument("matmul on warpgroup MMA: an operand broadcasts along some batch dimensions only");
  if (!tl.warpgroup_mma() || tl.tile_m != tl.warpgroups * kRows || tl.tile_m > 256 || tl.tile_n % kSwizzleRow ||
      tl.tile_n > kWarpgroupMaxColumns || tl.tile_n == 0 || tl.tile_k != kSlice || tl.stages < 2 || tl.stages > 8 ||
      tl.splits != 1)
    throw std::invalid_argument(fmt::format("matmul on warpgroup MMA: tiling '{}' is not one (64 rows per warpgroup up "
                                            "to 256, 64 to 256 columns in 64s, K slices of 64, 2 to 8 stages)",
                                            tl.config().text()));
  const std::string name = matmul_checked_name(s) + fmt::format("_t{}x{}x{}_wg{}_s{}_wgmma_f32", tl.tile_m, tl.tile_n,
                                                                tl.tile_k, tl.warpgroups, tl.stages);
  const Type h = *s.a_half;
  const uint32_t M = uint32_t(s.m), K = uint32_t(s.k), N = uint32_t(s.n), batches = uint32_t(s.batch_count());
  if (M == 0 || N == 0 || batches == 0) return empty_result(name);
  if (K == 0) throw std::invalid_argument("matmul on warpgroup MMA: K is 0 (tensor maps cannot be empty)");
  const uint32_t tiles_m = (M + tl.tile_m - 1) / tl.tile_m, tiles_n = (N + tl.tile_n - 1) / tl.tile_n;
  const uint32_t k_tiles = (K + kSlice - 1) / kSlice;
  const uint32_t S = tl.stages;
  const uint32_t a_elems = tl.tile_m * kSlice, b_elems = tl.tile_n * kSlice;
  const uint32_t stage_bytes = (a_elems + b_elems) * 2;

  KernelBuilder kb(name, tl.invocations());
  Buf A = kb.buffer("a", h, Access::Read);
  Buf B = kb.buffer("b", h, Access::Read);
  Buf C = kb.buffer("c", Type::F32, Access::Write);

  // An operand is K-major where its buffer runs along K (A as stored, B transposed): one copy of 64 k x the block's
  // rows per slice, one 128-byte row per m (or n). An MN-major one (B as stored, A transposed) takes a copy per 64
  // columns, one 128-byte row of 64 m (or n) per k.
  struct Operand {
    bool k_major, batched;
    uint32_t map;
    Shared tile;
    uint32_t extent, elems;
  };
  auto operand = [&](const char* what, const Buf& buf, bool k_major, uint32_t mn, uint32_t extent, int64_t step) {
    std::vector<uint64_t> extents = k_major ? std::vector<uint64_t>{K, mn} : std::vector<uint64_t>{mn, K};
    std::vector<uint64_t> strides{k_major ? K : mn};
    std::vector<uint32_t> box = k_major ? std::vector<uint32_t>{kSlice, extent} : std::vector<uint32_t>{kSwizzleRow, kSlice};
    if (step != 0 && batches > 1) {  // a third dimension for the batch; a broadcast operand has none
      extents.push_back(batches);
      strides.push_back(uint64_t(step));
      box.push_back(1);
    }
    const uint32_t map = kb.tensor_map(fmt::format("{}_map", what), buf, extents, strides, box, /*swizzle_128=*/true);
    return Operand{k_major, extents.size() == 3, map, kb.shared(fmt::format("{}_tile", what), h, S * extent * kSlice), extent, extent * kSlice};
  };
  const Operand a = operand("a", A, !s.a_transposed, M, tl.tile_m, *a_step);
  const Operand b = operand("b", B, s.b_transposed, N, tl.tile_n, *b_step);
  const uint32_t full = kb.arrival_barriers("full", S, 1);
  const uint32_t empty = kb.arrival_barriers("empty", S, tl.warpgroups);
  Fragment acc = kb.warpgroup_accumulator("acc", tl.tile_n);

  Val lid = kb.local_id();
  Val warpgroup = lid / kWarpgroupInvocations;
  const TilePosition at = banded_tile_position(kb, kb.group_id(), tiles_m, tiles_n);
  // Uniform across the workgroup (a folded grid's extra workgroups skip everything).
  kb.if_(at.batch < batches, [&] {
    Val row0 = at.tile_row * tl.tile_m, col0 = at.tile_col * tl.tile_n;
    auto copy_slice = [&](const Operand& op, Val mn0, Val k0, Val slot) {
      auto coords = [&](Val inner, Val outer) {
        std::vector<Val> c{inner, outer};
        if (op.batched) c.push_back(at.batch);
        return c;
      };
      if (op.k_major) {
        kb.tensor_copy(op.tile, slot * op.elems, op.map, coords(k0, mn0), full, slot);
      } else {
        for (uint32_t j = 0; j < op.extent / kSwizzleRow; ++j)
          kb.tensor_copy(op.tile, slot * op.elems + j * kBox, op.map, coords(mn0 + j * kSwizzleRow, k0), full, slot);
      }
    };
    // The warpgroup's operand at K offset kk of a stage: K-major rows advance 16 elements (32 bytes) along their
    // 128-byte row, MN-major ones 16 rows.
    auto tile_at = [&](const Operand& op, Val stage_start, uint32_t kk) {
      if (op.k_major) return KernelBuilder::WarpgroupTile{op.tile, stage_start + kk, 0, kRowGroup, false, true};
      return KernelBuilder::WarpgroupTile{op.tile, stage_start + kk * kSwizzleRow, kRowGroup, kBox, true, true};
    };

    kb.if_else(
        warpgroup == 0,
        [&] {
          // The producer: one invocation issues every copy. Slice kt goes to stage kt % S once the consumers have
          // released that stage's previous slice (round kt / S - 1, whose empty phase has parity (kt / S + 1) % 2).
          kb.if_(lid == 0, [&] {
            kb.for_(kb.u32(0), kb.u32(k_tiles), [&](Val kt) {
              Val slot = kt % S, round = kt / S;
              kb.if_(kt >= S, [&] { kb.await_phase(empty, slot, (round + 1) % 2); });
              kb.arrive(full, slot, stage_bytes);
              Val k0 = kt * kSlice;
              copy_slice(a, row0, k0, slot);
              copy_slice(b, col0, k0, slot);
            });
          });
        },
        [&] {
          // A consumer: warpgroup w (1 ..) multiplies rows 64 (w - 1) .. of the block. Slice kt's multiplies stay in
          // flight while it waits for slice kt + 1; once wait(1) returns, slice kt - 1's are done and its stage goes
          // back to the producer (one arrival per consumer warpgroup).
          Val w = warpgroup - 1;
          Val t = lid % kWarpgroupInvocations;
          Val a_rows = a.k_major ? w * (kRows * kSlice) : w * kBox;
          kb.matrix_fill(acc, kb.f32(0));
          kb.for_(kb.u32(0), kb.u32(k_tiles), [&](Val kt) {
            Val slot = kt % S;
            kb.await_phase(full, slot, (kt / S) % 2);
            Val a_stage = slot * a.elems + a_rows, b_stage = slot * b.elems;
            for (uint32_t kk = 0; kk < kSlice; kk += kDepth)
              kb.warpgroup_mul_add(acc, tile_at(a, a_stage, kk), tile_at(b, b_stage, kk));
            kb.warpgroup_commit();
            kb.warpgroup_wait(1);
            kb.if_((kt > 0u) & (t == 0u), [&] { kb.arrive(empty, (kt - 1) % S); });
          });
          kb.warpgroup_wait(0);

          // Invocation t of the warpgroup holds rows 16 (t / 32) + (t % 32) / 4 (+ 8) and columns 2 (t % 4) (+ 1) of
          // every 8 columns (kernel.h's accumulator layout).
          Val r = row0 + w * kRows + (t / 32) * 16 + (t % 32) / 4;
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
  });
  uint64_t groups = uint64_t(batches) * tiles_m * tiles_n;
  return {kb.finish(), groups};
}

}  // namespace spire::lowering::heavy
