#include "kernels/matmul_mma_kernel.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "kernels/tile_order.h"

namespace spire::lowering::heavy {

using namespace kir;

namespace {

constexpr uint32_t kPadBytes = 16;                      // one row's padding
constexpr uint32_t kCopyBytes = 16;                     // one asynchronous copy
constexpr uint32_t kStage = kMatrixTile * kMatrixTile;  // one subgroup's f32 staging tile
// An unrolled kernel stages its result through this many subgroups' tiles at a time, leaving its workgroup memory
// to the operands' pipeline (48 KiB hold 3 stages of 128x256x16 and 4 staging tiles, not 16).
constexpr uint32_t kUnrolledResultTiles = 4;

MatmulTiling mma_tiling(uint32_t tile_m, uint32_t tile_n, uint32_t tile_k, uint32_t warps_m, uint32_t warps_n) {
  MatmulTiling t{tile_m, tile_n, tile_k, 1, 1};
  t.warps_m = warps_m;
  t.warps_n = warps_n;
  return t;
}

}  // namespace

MmaStaging mma_staging(const MatmulShape& s, const MatmulTiling& tl, bool async_copies, bool b_gathered) {
  MmaStaging p;
  const uint32_t bytes = dtype_bytes(mma_operand_type(s));
  const uint32_t chunk = kCopyBytes / bytes, pad = kPadBytes / bytes;
  // 16-byte chunks along the contiguous direction: rows (and batches) must start on 16 bytes.
  p.a_copies = async_copies && (s.a_transposed ? s.m : s.k) % chunk == 0;
  p.b_copies = async_copies && !b_gathered && (s.b_transposed ? s.k : s.n) % chunk == 0;
  p.stages = p.a_copies && p.b_copies ? std::max<uint32_t>(tl.stages, 2) : 1;
  const uint32_t warps = tl.warps_m * tl.warps_n;
  p.result_tiles = tl.unroll > 1 ? std::gcd(warps, kUnrolledResultTiles) : warps;
  p.b_pad = tl.b_unpadded && s.b_transposed && !b_gathered ? 0 : pad;
  const uint64_t a = uint64_t(s.a_transposed ? tl.tile_k : tl.tile_m) * ((s.a_transposed ? tl.tile_m : tl.tile_k) + pad);
  const uint64_t b = uint64_t(s.b_transposed ? tl.tile_n : tl.tile_k) * ((s.b_transposed ? tl.tile_k : tl.tile_n) + p.b_pad);
  p.shared_bytes = p.stages * (a + b) * bytes + uint64_t(p.result_tiles) * tl.results * kStage * 4;
  return p;
}

bool matmul_fits_tensor_cores(const MatmulShape& s, Type t) {
  if (t != Type::F32) return false;
  if (s.tf32) return !s.a_half && !s.b_half;
  return s.a_half && s.b_half && *s.a_half == *s.b_half;
}

Type mma_operand_type(const MatmulShape& s) {
  if (s.tf32) return Type::F32;
  if (!s.a_half) throw std::invalid_argument("matmul on tensor cores: the operands are neither 16-bit nor TF32");
  return *s.a_half;
}

MatmulTiling choose_matmul_mma_tiling(const MatmulShape& s, const Limits& limits) {
  auto blocks = [&](int64_t tm, int64_t tn) { return s.batch_count() * ((s.m + tm - 1) / tm) * ((s.n + tn - 1) / tn); };
  // The deepest pipeline (2 to 4 stages) of `t` that the workgroup memory holds, if `min_stages` fits.
  auto deepest = [&](MatmulTiling t, uint32_t min_stages) -> std::optional<MatmulTiling> {
    for (t.stages = 4; t.stages >= min_stages; --t.stages)
      if (mma_staging(s, t, limits.async_copy).shared_bytes <= limits.shared_bytes) return t;
    return std::nullopt;
  };
  // As for the SIMT kernel: about one workgroup per core at least (132 on an H100). 64x64 per subgroup, and for
  // large products 256x128 blocks with 64-deep slices 4 stages deep (225 KiB): the tuner's picks on the H100 for
  // 2048 to 8192 squares (1.08x 128x128 blocks, 1.7x a 2 x 4 split of 128x128). Shallow pipelines of the large
  // block lose to the 128x128 one, so it needs 3 stages (167 KiB, just past an A100's 163) or is passed over.
  // TF32 operands are twice the bytes: 32-deep slices keep that block's slice the same size.
  const uint32_t deep_k = s.tf32 ? 32 : 64;
  if (s.m >= 256 && s.n >= 128 && blocks(256, 128) >= 128)
    if (auto t = deepest(mma_tiling(256, 128, deep_k, 4, 2), 3)) return *t;
  // Where workgroup memory is too small for that (48 KiB: NVIDIA's Vulkan driver), 128x256 blocks with 16-deep slices:
  // of 2 x 4 subgroups (64x64 each), 3 stages with the K loop unrolled by them (so that copies staged through registers
  // keep 2 slices in flight, backends/spirv/copy_plan.h), since barriers stopped fencing storage buffers
  // (2026-11-26, the H100's vulkan:0, fresh processes: 2048³ 0.0786 ms, 4096³ 0.625, 8192³ 4.57-4.64 against 0.0815,
  // 0.646 and 4.97 for 4 x 4 subgroups 2 stages deep, the fastest before; docs/PERFORMANCE.md); else those 2 stages.
  if (limits.shared_bytes < 64 * 1024 && s.m >= 128 && s.n >= 256 && blocks(128, 256) >= 128 &&
      limits.max_invocations >= 512) {
    MatmulTiling deep = mma_tiling(128, 256, 16, 2, 4);
    deep.stages = deep.unroll = 3;
    // B read as [column][k] (a Linear layer's weight) fits 3 stages only with its rows unpadded (MatmulTiling::b_unpadded;
    // the H100's vulkan:0, bf16 8192^3 B [N, K]: see docs/PERFORMANCE.md).
    deep.b_unpadded = s.b_transposed;
    const MmaStaging deep_plan = mma_staging(s, deep, limits.async_copy);
    // Where copies pass through registers (not PTX's cp.async), 4 more subgroups that only copy: the multiplying ones
    // then issue no copies and hold none in their registers (the H100's vulkan:0, 2026-11-28: 4096³ 0.566 ms against
    // 0.627, 8192³ 4.12-4.13 against 4.28-4.32; with 1 to 3 copying subgroups the driver spilled registers).
    if (!limits.ptx && deep.invocations() + 4 * 32 <= limits.max_invocations) deep.producers = 4;
    if (deep_plan.stages == 3 && deep_plan.shared_bytes <= limits.shared_bytes) return deep;
    MatmulTiling t = mma_tiling(128, 256, 16, 4, 4);
    t.stages = 2;
    if (mma_staging(s, t, limits.async_copy).shared_bytes <= limits.shared_bytes) return t;
  }
  if (s.m >= 128 && s.n >= 128 && blocks(128, 128) >= 128)
    if (auto t = deepest(mma_tiling(128, 128, 32, 2, 2), 2)) return *t;
  if (s.m >= 64 && s.n >= 64 && blocks(64, 64) >= 32)
    if (auto t = deepest(mma_tiling(64, 64, 32, 2, 2), 2)) return *t;
  return deepest(mma_tiling(32, 32, 32, 2, 2), 2).value_or(mma_tiling(32, 32, 32, 2, 2));
}

std::vector<MatmulTiling> matmul_mma_candidates(const MatmulShape& s, const Limits& limits) {
  auto shared_bytes = [&](const MatmulTiling& tl) { return mma_staging(s, tl, limits.async_copy).shared_bytes; };
  std::vector<MatmulTiling> out{choose_matmul_mma_tiling(s, limits)};
  // Larger blocks read fewer bytes per product (a 128x128 block of bf16 needs 64 flops per byte from L2, more
  // than an H100's L2 gives at its tensor-core rate); 64x64 per subgroup reads fewer shared-memory bytes too.
  const uint32_t shapes[][4] = {{32, 32, 2, 2},   {64, 64, 2, 2},   {64, 64, 4, 1},   {128, 64, 4, 2},
                                {64, 128, 2, 4},  {128, 128, 2, 4}, {128, 128, 4, 2}, {128, 128, 4, 4},
                                {128, 128, 2, 2}, {256, 128, 4, 2}, {128, 256, 2, 4},
                                // 16 subgroups of 64x32 or 32x64: half the accumulator registers of 64x64 each, for
                                // devices whose small workgroup memory caps the block's depth (vulkan:0, 48 KiB)
                                {128, 256, 2, 8}, {128, 256, 4, 4}, {256, 128, 4, 4}};
  const bool pipelined = mma_staging(s, out[0], limits.async_copy).stages > 1;
  for (const auto& sh : shapes)
    for (uint32_t k : {16u, 32u, 64u})
      for (uint32_t stages : {2u, 3u, 4u})
        for (bool unrolled : {false, true}) {
          // More stages than 2, and unrolling by them, only where both operands copy. (Rolled, 2 stages already keep
          // their one slice in flight through every backend.)
          if ((stages > 2 || unrolled) && !pipelined) continue;
          if (unrolled && stages == 2) continue;
          MatmulTiling tl = mma_tiling(sh[0], sh[1], k, sh[2], sh[3]);
          tl.stages = stages;
          tl.unroll = unrolled ? stages : 1;
          // A B read as [column][k] that does not fit padded may fit unpadded.
          if (s.b_transposed && shared_bytes(tl) > limits.shared_bytes) tl.b_unpadded = true;
          if (tl.invocations() > limits.max_invocations || shared_bytes(tl) > limits.shared_bytes) continue;
          // A block more than twice the (rounded up) extent only adds masked work.
          if (tl.tile_m > 2 * std::max<int64_t>(s.m, 16) || tl.tile_n > 2 * std::max<int64_t>(s.n, 16)) continue;
          if (std::find(out.begin(), out.end(), tl) == out.end()) out.push_back(tl);
        }
  // Copying subgroups where copies pass through registers (Vulkan: not PTX's cp.async), 2 or 4 of them, for every
  // unrolled tiling (the ones whose copies stay in flight across waits there). On the H100's vulkan:0 fewer than 4
  // beside 8 multiplying subgroups made NVIDIA's compiler spill registers.
  if (pipelined && !limits.ptx) {
    const size_t plain = out.size();
    for (size_t i = 0; i < plain; ++i)
      for (uint32_t producers : {2u, 4u}) {
        MatmulTiling tl = out[i];
        if (tl.unroll == 1 || tl.producers > 0) continue;
        tl.producers = producers;
        if (tl.invocations() <= limits.max_invocations &&
            std::find(out.begin(), out.end(), tl) == out.end()) out.push_back(tl);
      }
  }
  return out;
}

namespace {

// How one operand moves into its workgroup tile: `outer` x `inner` elements per K slice, `inner` along the
// operand's contiguous direction in memory (so neighbouring invocations read neighbouring addresses), each tile
// row padded by 16 bytes (the fragment loads of neighbouring rows then fall in different banks).
struct Staging {
  const Buf* buffer;
  Shared tile;
  uint32_t outer, inner, ld;         // ld: a tile row, padding included
  bool edges;                        // some slice reaches past the product: mask
  bool copies;                       // 16-byte asynchronous copies (else element by element)
  bool k_inner;                      // K runs along `inner` (else along `outer`)
  uint32_t k_stride;                 // buffer elements between neighbouring k
  // (o, i) of the slice at k0 = 0 -> its buffer element, and whether its row (or column) lies in the product.
  std::function<Val(Val o, Val i)> offset, in_range;
  // A gathered operand (no buffer, `offset` and `in_range` unused): MmaGemmIo's b_prepare and b_gather; a located one
  // (`offset` and `in_range` unused): b_prepare and b_locate.
  std::function<std::vector<Val>(Val col)> prepare;
  std::function<void(Shared tile, Val to, const std::vector<Val>& prepared, Val k)> gather;
  std::function<std::pair<Val, Val>(const std::vector<Val>& prepared, Val k)> locate;
};

// What one invocation moves of each slice: worked out once, before the K loop, so that a slice costs an add per
// element (ptxas does not hoist the divisions that place an invocation in the tile out of the loop).
struct StagingItem {
  Val to;                    // element in the stage
  Val offset;                // buffer element at k0 = 0 (none for a gathered or located operand)
  Val kpos;                  // its k within the slice
  std::optional<Val> in_range;  // its row (or column) lies in the product (edges only)
  std::optional<Val> present;   // the invocation has this item (the last round of a tile may be partial)
  std::vector<Val> prepared;    // a gathered or located operand's values for the item's column
};

}  // namespace

uint32_t mma_subgroup_accumulators(const MatmulTiling& tl) {
  return (tl.tile_m / tl.warps_m / kMatrixTile) * (tl.tile_n / tl.warps_n / kMatrixTile);
}

void check_mma_tiling(const MatmulTiling& tl) {
  if (!tl.tensor_cores() || tl.splits != 1 || tl.tile_m % (tl.warps_m * kMatrixTile) || tl.tile_n % (tl.warps_n * kMatrixTile) ||
      tl.tile_k % kMatrixTile || tl.tile_k == 0)
    throw std::invalid_argument(fmt::format("matmul on tensor cores: tiling '{}' does not give every subgroup whole "
                                            "16x16 fragments", tl.config().text()));
  if (tl.stages < 2 || tl.stages > 8) throw std::invalid_argument(fmt::format("matmul on tensor cores: {} stages", tl.stages));
  if (tl.producers > 8)
    throw std::invalid_argument(fmt::format("matmul on tensor cores: tiling '{}' has {} copying subgroups (at most 8)",
                                            tl.config().text(), tl.producers));
  const uint32_t frags = mma_subgroup_accumulators(tl);
  if (tl.results == 0 || frags % tl.results)
    throw std::invalid_argument(fmt::format("matmul on tensor cores: tiling '{}' stages {} accumulators at once, not a "
                                            "divisor of a subgroup's {}", tl.config().text(), tl.results, frags));
  if (tl.unroll != 1 && tl.unroll != tl.stages)
    throw std::invalid_argument(fmt::format("matmul on tensor cores: tiling '{}' unrolls the K loop {} deep; it unrolls "
                                            "by the pipeline's stage count or not at all",
                                            tl.config().text(), tl.unroll));
}

std::string mma_name_suffix(const MatmulTiling& tl, const MmaStaging& plan) {
  const bool unrolled = tl.unroll > 1 && plan.stages > 1;
  return fmt::format("_t{}x{}x{}_w{}x{}{}{}{}{}{}_mma_f32", tl.tile_m, tl.tile_n, tl.tile_k, tl.warps_m, tl.warps_n,
                     plan.a_copies || plan.b_copies ? fmt::format("_c{}", plan.stages) : "", unrolled ? "_u" : "",
                     tl.producers > 0 ? fmt::format("_p{}", tl.producers) : "", plan.b_pad == 0 ? "_bu" : "",
                     tl.results > 1 ? fmt::format("_r{}", tl.results) : "");
}

uint64_t emit_mma_gemm(KernelBuilder& kb, const MatmulShape& s, const MatmulTiling& tl, const MmaStaging& plan,
                       const MmaGemmIo& io) {
  // Without a pipeline (an operand staged element by element) there is nothing to unroll for.
  const bool unrolled = tl.unroll > 1 && plan.stages > 1;
  const bool gathered = bool(io.b_gather), located = bool(io.b_locate);
  if (located && (!io.b || gathered))
    throw std::invalid_argument("matmul on tensor cores: a located B needs its buffer and no gather");
  const Type h = mma_operand_type(s);
  // Padding and 16-byte copies in elements of the staged type.
  const uint32_t pad = kPadBytes / dtype_bytes(h), chunk = kCopyBytes / dtype_bytes(h);
  const uint32_t M = uint32_t(s.m), K = uint32_t(s.k), N = uint32_t(s.n), batches = uint32_t(s.batch_count());
  const uint32_t tiles_m = (M + tl.tile_m - 1) / tl.tile_m, tiles_n = (N + tl.tile_n - 1) / tl.tile_n;
  const uint32_t k_tiles = (K + tl.tile_k - 1) / tl.tile_k;
  // `warps` multiply; `producers` more subgroups (numbered after them) only copy, where the tiling has them and both
  // operands copy (a pipeline). Without one, every invocation stages elements and the multiplying subgroups multiply.
  const uint32_t warps = tl.warps_m * tl.warps_n, producers = tl.producers;
  const bool specialized = producers > 0 && plan.stages >= 2;
  const uint32_t threads = (specialized ? warps : warps + producers) * kWarp;
  const uint32_t warp_m = tl.tile_m / tl.warps_m, warp_n = tl.tile_n / tl.warps_n;
  const uint32_t frags_m = warp_m / kMatrixTile, frags_n = warp_n / kMatrixTile;

  const Buf& A = io.a;
  // A's tile is [row][k], or [k][row] for a transposed A (its fragments then column-major); B's is [k][column], or
  // [column][k] for a transposed B.
  const uint32_t a_ld = (s.a_transposed ? tl.tile_m : tl.tile_k) + pad;
  const uint32_t b_ld = (s.b_transposed ? tl.tile_k : tl.tile_n) + plan.b_pad;
  const uint32_t a_elems = (s.a_transposed ? tl.tile_k : tl.tile_m) * a_ld;
  const uint32_t b_elems = (s.b_transposed ? tl.tile_n : tl.tile_k) * b_ld;
  Shared a_tile = kb.shared("a_tile", h, plan.stages * a_elems);
  Shared b_tile = kb.shared("b_tile", h, plan.stages * b_elems);
  Shared c_stage = kb.shared("c_stage", Type::F32, plan.result_tiles * tl.results * kStage);
  std::vector<Fragment> acc, a_frag, b_frag;
  for (uint32_t i = 0; i < frags_m * frags_n; ++i) acc.push_back(kb.fragment(fmt::format("acc{}", i), MatrixUse::Accumulator, Type::F32));
  for (uint32_t i = 0; i < frags_m; ++i) a_frag.push_back(kb.fragment(fmt::format("a{}", i), MatrixUse::A, h, s.a_transposed));
  for (uint32_t j = 0; j < frags_n; ++j) b_frag.push_back(kb.fragment(fmt::format("b{}", j), MatrixUse::B, h, s.b_transposed));

  Val lid = kb.local_id();
  Val group = kb.group_id();
  // Fragments belong to subgroups; the device's subgroups must be the 32-wide ones the tiling assumes.
  Val warp = kb.subgroup_id();
  Val lane = kb.subgroup_local_id();
  Val warp_row = warp / tl.warps_n, warp_col = warp % tl.warps_n;
  const TilePosition at = banded_tile_position(kb, group, tiles_m, tiles_n);
  Val batch = at.batch, tile_row = at.tile_row, tile_col = at.tile_col;
  // Uniform across the workgroup (a folded grid's extra workgroups skip everything, barriers included).
  kb.if_(batch < batches, [&] {
    Val a_base = matmul_batch_offset(kb, s, batch, s.a_batch_strides);
    Val b_base;  // a gathered B has no buffer
    if (!gathered && !located) b_base = matmul_batch_offset(kb, s, batch, s.b_batch_strides);
    Val row0 = tile_row * tl.tile_m, col0 = tile_col * tl.tile_n;
    // kir keeps bf16 to loads, stores and conversions from f32, so its zero is a conversion.
    Val zero = h == Type::F32 ? kb.f32(0) : cast(kb.f32(0), h);
    // Where the tiling has copying subgroups, what only the multiplying ones run goes under this condition.
    std::optional<Val> multiplying;
    if (producers > 0) multiplying = warp < warps;
    auto only_where = [&](std::optional<Val> condition, const std::function<void()>& body) {
      if (condition) kb.if_(*condition, body);
      else body();
    };
    auto fill_accumulators = [&] {
      for (Fragment f : acc) kb.matrix_fill(f, kb.f32(0));
    };
    if (!specialized) fill_accumulators();

    // (outer, inner) of the slice at k0 = 0 -> its buffer element, and whether its row (column) is in the product.
    Staging a_st{&A, a_tile, 0, 0, a_ld, M % tl.tile_m || K % tl.tile_k, plan.a_copies, !s.a_transposed, 0, {}, {}, {}, {}, {}};
    if (!s.a_transposed) {
      a_st.outer = tl.tile_m, a_st.inner = tl.tile_k, a_st.k_stride = 1;
      a_st.offset = [&](Val o, Val i) { return a_base + (row0 + o) * K + i; };
      a_st.in_range = [&](Val o, Val) { return row0 + o < M; };
    } else {
      a_st.outer = tl.tile_k, a_st.inner = tl.tile_m, a_st.k_stride = M;
      a_st.offset = [&](Val o, Val i) { return o * M + (row0 + i); };
      a_st.in_range = [&](Val, Val i) { return row0 + i < M; };
    }
    Staging b_st{gathered ? nullptr : &*io.b, b_tile, 0, 0, b_ld, !gathered && !located && (N % tl.tile_n || K % tl.tile_k),
                 plan.b_copies, s.b_transposed, 0, {}, {}, io.b_prepare, io.b_gather, io.b_locate};
    if (located && s.b_transposed) {
      // Piece (o = column, i = k) of each slice, wherever b_locate places it.
      b_st.outer = tl.tile_n, b_st.inner = tl.tile_k, b_st.k_stride = 0;
    } else if (located) {
      // Piece (o = k, i = column) of each slice, likewise.
      b_st.outer = tl.tile_k, b_st.inner = tl.tile_n, b_st.k_stride = 0;
    } else if (gathered) {
      // Element (o = k, i = column) of each slice, gathered; rows of the slice are K, columns the block's.
      b_st.outer = tl.tile_k, b_st.inner = tl.tile_n, b_st.k_stride = 0;
    } else if (!s.b_transposed) {
      b_st.outer = tl.tile_k, b_st.inner = tl.tile_n, b_st.k_stride = N;
      b_st.offset = [&](Val o, Val i) { return b_base + o * N + (col0 + i); };
      b_st.in_range = [&](Val, Val i) { return col0 + i < N; };
    } else {
      b_st.outer = tl.tile_n, b_st.inner = tl.tile_k, b_st.k_stride = 1;
      b_st.offset = [&](Val o, Val i) { return (col0 + o) * K + i; };
      b_st.in_range = [&](Val o, Val) { return col0 + o < N; };
    }
    // Consecutive invocations take consecutive elements (or 8-element chunks, 16 bytes) along the contiguous
    // direction, so the reads coalesce.
    // `first`: this invocation's place among the `count` that stage.
    auto items_of = [&](const Staging& st, Val first, uint32_t count) {
      const uint32_t step = st.copies ? chunk : 1, per_row = st.inner / step, items = st.outer * per_row;
      std::vector<StagingItem> out;
      for (uint32_t base = 0; base < items; base += count) {
        Val idx = first + base;
        Val o = idx / per_row, i = (idx % per_row) * step;
        StagingItem it{o * st.ld + i, {}, st.k_inner ? i : o, std::nullopt, std::nullopt, {}};
        if (st.gather) it.prepared = st.prepare(col0 + i);
        else if (st.locate) it.prepared = st.prepare(col0 + (st.k_inner ? o : i));
        else it.offset = st.offset(o, i);
        if (st.edges) it.in_range = st.in_range(o, i);
        if (base + count > items) it.present = idx < items;
        out.push_back(it);
      }
      return out;
    };
    std::vector<StagingItem> a_items, b_items;
    if (!specialized) a_items = items_of(a_st, lid, threads), b_items = items_of(b_st, lid, threads);

    // One slice of an operand into stage `at` (an element offset). Elements outside the product become zeros
    // and are not read.
    auto stage = [&](const Staging& st, const std::vector<StagingItem>& items, Val k0, Val at) {
      for (const StagingItem& it : items) {
        auto one = [&] {
          Val to = at + it.to;
          if (st.gather) {  // a gathered element, or its zero
            st.gather(st.tile, to, it.prepared, k0 + it.kpos);
            return;
          }
          if (st.locate) {  // a located piece, or its zeros
            const auto [valid, from] = st.locate(it.prepared, k0 + it.kpos);
            if (st.copies) kb.copy_to_shared(st.tile, to, *st.buffer, from, valid);
            else kb.if_else(valid, [&] { st.tile[to] = (*st.buffer)[from]; }, [&] { st.tile[to] = zero; });
            return;
          }
          Val from = it.offset + (st.k_stride == 1 ? k0 : k0 * st.k_stride);
          std::optional<Val> valid;
          if (it.in_range) valid = *it.in_range & (k0 + it.kpos < K);
          if (st.copies) {
            kb.copy_to_shared(st.tile, to, *st.buffer, from, valid ? *valid : kb.boolean(true));
          } else if (valid) {
            kb.if_else(*valid, [&] { st.tile[to] = (*st.buffer)[from]; }, [&] { st.tile[to] = zero; });
          } else {
            st.tile[to] = (*st.buffer)[from];
          }
        };
        if (it.present) kb.if_(*it.present, one);
        else one();
      }
    };
    // The products of one staged slice.
    auto multiply = [&](Val a_at, Val b_at) {
      for (uint32_t kk = 0; kk < tl.tile_k; kk += kMatrixTile) {
        for (uint32_t i = 0; i < frags_m; ++i) {
          const uint32_t r = i * kMatrixTile;
          Val at = s.a_transposed ? a_at + (warp_row * warp_m + (kk * a_ld + r)) : a_at + ((warp_row * warp_m + r) * a_ld + kk);
          kb.matrix_load(a_frag[i], a_tile, at, a_ld);
        }
        for (uint32_t j = 0; j < frags_n; ++j) {
          const uint32_t c = j * kMatrixTile;
          Val at = s.b_transposed ? b_at + ((warp_col * warp_n + c) * b_ld + kk) : b_at + (warp_col * warp_n + (kk * b_ld + c));
          kb.matrix_load(b_frag[j], b_tile, at, b_ld);
        }
        for (uint32_t i = 0; i < frags_m; ++i)
          for (uint32_t j = 0; j < frags_n; ++j)
            kb.matrix_mul_add(acc[i * frags_n + j], a_frag[i], b_frag[j], acc[i * frags_n + j]);
      }
    };

    // Rounds 0 .. k_tiles - 1 of a pipeline S stages deep: unrolled, laps of S rounds and the rounds past the last
    // whole lap after them, so that every stage's offsets are constants and each round's copies are their own
    // statements (a backend that stages copies through registers then keeps S - 1 slices in flight across the waits,
    // backends/spirv/copy_plan.h; rolled, a round's copy lands when the next round issues its own). `slot` is kt % S
    // where the unrolled loop knows it.
    auto rounds = [&](const std::function<void(Val kt, std::optional<uint32_t> slot)>& round) {
      const uint32_t S = plan.stages;
      if (!unrolled) {
        kb.for_(kb.u32(0), kb.u32(k_tiles), [&](Val kt) { round(kt, std::nullopt); });
        return;
      }
      const uint32_t laps = k_tiles / S;
      kb.for_(kb.u32(0), kb.u32(laps), [&](Val lap) {
        for (uint32_t j = 0; j < S; ++j) round(lap * S + j, j);
      });
      for (uint32_t kt = laps * S; kt < k_tiles; ++kt) round(kb.u32(kt), kt % S);
    };
    // A pipeline's first S - 1 slices, a batch of copies each (an empty batch past the end keeps the count).
    auto prologue = [&](const std::vector<StagingItem>& a_by, const std::vector<StagingItem>& b_by) {
      for (uint32_t p = 0; p + 1 < plan.stages; ++p) {
        if (p < k_tiles) {
          stage(a_st, a_by, kb.u32(p * tl.tile_k), kb.u32(p * a_elems));
          stage(b_st, b_by, kb.u32(p * tl.tile_k), kb.u32(p * b_elems));
        }
        kb.copy_commit();
      }
    };
    // Round kt's copies: slice kt + S - 1 (where there is one) into the stage slice kt - 1 left, a batch.
    auto refill = [&](Val kt, std::optional<uint32_t> slot, const std::vector<StagingItem>& a_by,
                      const std::vector<StagingItem>& b_by) {
      const uint32_t S = plan.stages;
      Val ahead = kt + (S - 1);
      kb.if_(ahead < k_tiles, [&] {
        Val at = slot ? kb.u32((*slot + S - 1) % S) : ahead % S;
        stage(a_st, a_by, ahead * tl.tile_k, at * a_elems);
        stage(b_st, b_by, ahead * tl.tile_k, at * b_elems);
      });
      kb.copy_commit();
    };
    if (specialized) {
      // Copying subgroups beside the multiplying ones. Each role runs its own K loop with one barrier per round, the
      // same count in both, so every barrier is reached by every subgroup of the workgroup (each from its role's
      // code; NVIDIA's and the PTX barriers count arrivals, and roles are whole subgroups). Round kt: the
      // multiplying subgroups multiply slice kt while the copying ones issue slice kt + S - 1 into the stage slice
      // kt - 1 left (the previous barrier said every subgroup was done with it) and land slice kt + 1; the barrier
      // then shows slice kt + 1 to every subgroup. Copies staged through registers (Vulkan) keep their registers in
      // the copying subgroups only, and the accumulators live in the multiplying ones only.
      const uint32_t S = plan.stages;
      kb.if_else(
          *multiplying,
          [&] {
            fill_accumulators();
            kb.barrier();  // the prologue's slices have landed
            rounds([&](Val kt, std::optional<uint32_t> slot) {
              Val cur = slot ? kb.u32(*slot) : kt % S;
              multiply(cur * a_elems, cur * b_elems);
              kb.barrier();
            });
          },
          [&] {
            Val first = lid - warps * kWarp;
            const std::vector<StagingItem> pa = items_of(a_st, first, producers * kWarp);
            const std::vector<StagingItem> pb = items_of(b_st, first, producers * kWarp);
            prologue(pa, pb);
            kb.copy_wait(0);
            kb.barrier();
            rounds([&](Val kt, std::optional<uint32_t> slot) {
              refill(kt, slot, pa, pb);
              kb.copy_wait(S - 2);  // slice kt + 1 has landed
              kb.barrier();
            });
            kb.copy_wait(0);  // only empty batches are left
          });
    } else if (plan.stages >= 2) {
      // A pipeline of S stages: the copies of slices kt + 1 .. kt + S - 1 fly while slice kt is multiplied, one
      // batch of copies per slice. Round kt waits until at most S - 2 batches fly (slice kt has landed), then the
      // barrier shows it to every subgroup and tells the round that every subgroup has finished with slice kt - 1,
      // whose stage it refills with slice kt + S - 1.
      const uint32_t S = plan.stages;
      prologue(a_items, b_items);
      // Unrolled, the prologue's copies land before the loop. A backend that stages copies through registers keeps
      // a copy statement's registers until the wait that lands it, and a prologue copy's wait is inside the loop
      // (only on its first lap, which the backend cannot tell from the rest): every prologue copy would hold its
      // registers through the whole loop. On the H100's vulkan:0 this took the 128x256x16 3-stage kernel from 255
      // registers to 238 and bf16 8192^3 from 4.57-4.60 ms to 4.37-4.40 (docs/PERFORMANCE.md); the price is one
      // exposed load latency per workgroup, before its first slice.
      if (unrolled) kb.copy_wait(0);
      rounds([&](Val kt, std::optional<uint32_t> slot) {
        kb.copy_wait(S - 2);
        kb.barrier();
        refill(kt, slot, a_items, b_items);
        Val cur = slot ? kb.u32(*slot) : kt % S;
        multiply(cur * a_elems, cur * b_elems);
      });
      kb.copy_wait(0);  // only empty batches are left
    } else {
      const bool any_copies = plan.a_copies || plan.b_copies;
      kb.for_(kb.u32(0), kb.u32(k_tiles), [&](Val kt) {
        stage(a_st, a_items, kt * tl.tile_k, kb.u32(0));
        stage(b_st, b_items, kt * tl.tile_k, kb.u32(0));
        if (any_copies) {
          kb.copy_commit();
          kb.copy_wait(0);
        }
        kb.barrier();
        only_where(multiplying, [&] { multiply(kb.u32(0), kb.u32(0)); });
        kb.barrier();
      });
    }

    // Each accumulator leaves through a staging tile of the subgroup's own: lane l takes elements l, l + 32, ...
    // (two rows of 16 per step), so each half-subgroup stores 16 consecutive columns. With fewer tiles than
    // subgroups, the subgroups take turns (the barriers stay outside the turns: every invocation reaches them).
    // tl.results accumulators go through their tiles in one round, between two barriers.
    const uint32_t turns = warps / plan.result_tiles;
    Val stage_at = (warp % plan.result_tiles) * (tl.results * kStage);
    auto in_turn = [&](uint32_t turn, const std::function<void()>& body) {
      std::optional<Val> condition = multiplying;
      if (turns > 1) {
        Val mine = warp / plan.result_tiles == turn;
        condition = condition ? *condition & mine : mine;
      }
      only_where(condition, body);
    };
    for (uint32_t turn = 0; turn < turns; ++turn)
      for (uint32_t first = 0; first < frags_m * frags_n; first += tl.results) {
        in_turn(turn, [&] {
          for (uint32_t f = 0; f < tl.results; ++f)
            kb.matrix_store(c_stage, stage_at + f * kStage, kMatrixTile, acc[first + f]);
        });
        kb.barrier();
        in_turn(turn, [&] {
          for (uint32_t f = 0; f < tl.results; ++f) {
            const uint32_t i = (first + f) / frags_n, j = (first + f) % frags_n;
            Val r0 = row0 + warp_row * warp_m + i * kMatrixTile, c0 = col0 + warp_col * warp_n + j * kMatrixTile;
            for (uint32_t e = 0; e < kStage / kWarp; ++e) {
              Val idx = lane + e * kWarp;
              Val r = r0 + idx / kMatrixTile, c = c0 + idx % kMatrixTile;
              auto store = [&] { io.store(batch, r, c, c_stage[stage_at + (f * kStage + idx)]); };
              if (M % tl.tile_m || N % tl.tile_n) kb.if_((r < M) & (c < N), store);
              else store();
            }
          }
        });
        kb.barrier();  // the next round reuses the staging tiles
      }
  });
  return uint64_t(batches) * tiles_m * tiles_n;
}

HeavyKernel matmul_mma_kernel(const MatmulShape& s, const MatmulTiling& tl, bool async_copies) {
  if (!matmul_fits_tensor_cores(s, Type::F32))
    throw std::invalid_argument("matmul on tensor cores: both operands must be stored as f16, or both as bf16, or "
                                "both as f32 multiplied as TF32");
  check_mma_tiling(tl);
  const MmaStaging plan = mma_staging(s, tl, async_copies);
  const std::string name = matmul_checked_name(s) + mma_name_suffix(tl, plan);
  const uint32_t M = uint32_t(s.m), N = uint32_t(s.n);
  if (M == 0 || N == 0 || s.batch_count() == 0) return empty_result(name);
  KernelBuilder kb(name, tl.invocations());
  const Type h = mma_operand_type(s);
  MmaGemmIo io{kb.buffer("a", h, Access::Read), kb.buffer("b", h, Access::Read), {}, {}, {}, {}};
  Buf C = kb.buffer("c", Type::F32, Access::Write);
  io.store = [&](Val batch, Val r, Val c, Val v) { C[batch * (M * N) + r * N + c] = v; };
  const uint64_t groups = emit_mma_gemm(kb, s, tl, plan, io);
  return {kb.finish(), groups};
}

}  // namespace spire::lowering::heavy
