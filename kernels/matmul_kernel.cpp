#include "kernels/matmul_kernel.h"

#include "kernels/matvec_kernel.h"
#include "kernels/split_sum_kernel.h"
#include "kernels/tiled_gemm.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

int64_t MatmulShape::batch_count() const {
  int64_t c = 1;
  for (int64_t d : batch) c *= d;
  return c;
}

std::string MatmulShape::text() const {
  std::string t = fmt::format("m{}_k{}_n{}", m, k, n);
  if (!batch.empty())
    t += fmt::format("_a{}_b{}", a_batch.empty() ? "1" : dims_text(a_batch), b_batch.empty() ? "1" : dims_text(b_batch));
  if (a_transposed) t += "_at";
  if (b_transposed) t += "_bt";
  if (a_half) t += "_a" + std::string(dtype_name(*a_half));
  if (b_half) t += "_b" + std::string(dtype_name(*b_half));
  if (tf32) t += "_tf32";
  return t;
}

MatmulShape matmul_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.size() < 2 || b.size() < 2)
    throw std::invalid_argument(fmt::format("matmul: operands need rank >= 2, got [{}] and [{}]", dims_text(a), dims_text(b)));
  MatmulShape s;
  s.m = a[a.size() - 2];
  s.k = a[a.size() - 1];
  s.n = b[b.size() - 1];
  if (b[b.size() - 2] != s.k)
    throw std::invalid_argument(fmt::format("matmul: inner dimensions differ: [{}] x [{}]", dims_text(a), dims_text(b)));
  s.a_batch.assign(a.begin(), a.end() - 2);
  s.b_batch.assign(b.begin(), b.end() - 2);
  size_t rank = std::max(s.a_batch.size(), s.b_batch.size());
  s.batch.assign(rank, 1);
  s.a_batch_strides.assign(rank, 0);
  s.b_batch_strides.assign(rank, 0);
  // Walk from the innermost batch dim outwards (numpy aligns from the right), keeping each operand's
  // running element stride; a size-1 or missing dim broadcasts (stride 0).
  int64_t a_stride = s.m * s.k, b_stride = s.k * s.n;
  for (size_t i = 0; i < rank; ++i) {
    size_t d = rank - 1 - i;
    int64_t da = i < s.a_batch.size() ? s.a_batch[s.a_batch.size() - 1 - i] : 1;
    int64_t db = i < s.b_batch.size() ? s.b_batch[s.b_batch.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument(
          fmt::format("matmul: batch dimensions of [{}] and [{}] do not broadcast", dims_text(a), dims_text(b)));
    s.batch[d] = std::max(da, db);
    if (da == 0 || db == 0) s.batch[d] = 0;
    s.a_batch_strides[d] = da == 1 ? 0 : a_stride;
    s.b_batch_strides[d] = db == 1 ? 0 : b_stride;
    a_stride *= da;
    b_stride *= db;
  }
  return s;
}

MatmulTiling choose_matmul_tiling(const MatmulShape& s, Type t) {
  const bool f64 = t == Type::F64;
  auto blocks = [&](int64_t tile) { return s.batch_count() * ((s.m + tile - 1) / tile) * ((s.n + tile - 1) / tile); };
  // 128 and 32 workgroups: enough to occupy a large GPU's cores at least once.
  if (s.m >= 128 && s.n >= 128 && blocks(128) >= 128) return MatmulTiling{128, 128, f64 ? 4u : 8u, 8, 8};
  if (s.m >= 64 && s.n >= 64 && blocks(64) >= 32) {
    // Fewer than 128 columns that 64-wide blocks would pad by over a quarter (84 -> 128, against 96 in 32-wide
    // blocks): blocks of 64 x 32 with 4 x 2 outputs per invocation. LeNet's second layer's input gradient at batch 8192
    // (8192 x 10 x 84) on the H100: 0.0091 -> 0.0058 ms on cuda:0 (the tuner's pick on both backends).
    const int64_t wide = (s.n + 63) / 64 * 64, narrow = (s.n + 31) / 32 * 32;
    if (s.n < 128 && 4 * wide > 5 * narrow) return MatmulTiling{64, 32, f64 ? 8u : 16u, 4, 2};
    return MatmulTiling{64, 64, f64 ? 8u : 16u, 4, 4};
  }
  MatmulTiling small{16, 16, 16, 1, 1};
  if (s.batch_count() == 1 && s.k >= 2048) {
    // Few blocks and a long K: enough workgroups come from splitting K (at least 256 in all, the splits a power of
    // two: two or more per core of a 132-core GPU), each split keeping at least 8 slices of K so that the second
    // launch's additions stay a small part of the work. LeNet's first weight gradient at batch 8192 (26 blocks) on an
    // H200: 5 splits (about 128 workgroups, the rule before) 0.119 ms on cuda:0 and 0.114 on vulkan:0, 8 splits
    // 0.088 / 0.094, 16 splits 0.090 / 0.082 (docs/PERFORMANCE.md).
    MatmulTiling split = s.m >= 64 && s.n >= 64 ? MatmulTiling{64, 64, f64 ? 8u : 16u, 4, 4} : small;
    const int64_t b = blocks(split.tile_m), slices = (s.k + split.tile_k - 1) / split.tile_k;
    int64_t want = 1;
    while (want * b < 256) want *= 2;
    split.splits = uint32_t(std::clamp<int64_t>(want, 1, std::min<int64_t>(64, slices / 8)));
    if (split.splits >= 2) return split;
  }
  return small;
}

namespace {

// A CPU device (lavapipe) runs a workgroup's invocations as the SIMD lanes of one thread and switches between them at
// every barrier, and it has a few cores rather than a hundred: what costs there is barriers per product, not too few
// workgroups. So the most outputs per invocation (8 x 8) in 64 x 64 blocks of 64 invocations, 16-deep slices (8 in
// f64, for the same workgroup memory), and K never split (a split only adds workgroups and a second launch). On
// lavapipe (2 cores, 256-bit lanes) LeNet's fc1 products at batch 64 took 30-59 ms each in the GPU heuristic's 16 x 16
// blocks and 4.6-5.8 ms in these, the tuner's pick for every product of LeNet's step with both extents of 64 or more
// (docs/PERFORMANCE.md, "Lavapipe (CPU device)"). Narrow products (an extent under 32, LeNet's last layer) keep
// 16 x 16 blocks, which pad them least.
MatmulTiling cpu_matmul_tiling(const MatmulShape& s, Type t) {
  if (s.m >= 32 && s.n >= 32) return MatmulTiling{64, 64, t == Type::F64 ? 8u : 16u, 8, 8};
  return MatmulTiling{16, 16, 16, 1, 1};
}

}  // namespace

MatmulTiling choose_matmul_tiling(const MatmulShape& s, Type t, const Limits& limits) {
  if (limits.cpu) return cpu_matmul_tiling(s, t);
  const MatmulTiling tl = choose_matmul_tiling(s, t);
  // A short K gives each 128x128 block little work for its 64 accumulators per invocation. Through NVIDIA's Vulkan
  // compiler LeNet's first layer's input gradient at batch 8192 (8192 x 120 x 784) took 0.093 ms in 128x128 blocks
  // and 0.076 in 64x64 ones on the H100 (the step 1.387 -> 1.356 ms); through ptxas, which caps the 8x8 kernel at 128
  // registers for two workgroups per core (tiled_gemm.h), 128x128 took 0.069 (64x64 with 8x8: 0.070).
  if (!limits.ptx && !limits.cpu && tl.tile_m == 128 && tl.splits == 1 && s.k < 256)
    return MatmulTiling{64, 64, t == Type::F64 ? 8u : 16u, 4, 4};
  return tl;
}

Config MatmulTiling::config() const {
  if (matvec()) {
    Config c{{"matvec_slices", matvec_slices}};
    if (unroll != kMatvecUnroll) c.set("unroll", unroll);  // the default's text is the one tuning caches already hold
    return c;
  }
  if (workgroup_matrix)
    return Config{{"tile_m", tile_m}, {"tile_n", tile_n}, {"tile_k", tile_k}, {"workgroup_matrix", 1}, {"unroll", unroll}};
  if (warpgroup_mma())
    return Config{{"tile_m", tile_m}, {"tile_n", tile_n}, {"tile_k", tile_k}, {"warpgroups", warpgroups}, {"stages", stages}};
  if (tensor_cores()) {
    Config c{{"tile_m", tile_m},   {"tile_n", tile_n},   {"tile_k", tile_k},
             {"warps_m", warps_m}, {"warps_n", warps_n}, {"stages", stages}};
    if (unroll > 1) c.set("unroll", unroll);  // rolled configs keep the text tuning caches already hold
    if (producers > 0) c.set("producers", producers);
    if (b_unpadded) c.set("b_unpadded", 1);
    if (results > 1) c.set("results", results);
    if (packed()) c.set("lookahead", lookahead);
    return c;
  }
  Config c{{"tile_m", tile_m}, {"tile_n", tile_n}, {"tile_k", tile_k}, {"reg_m", reg_m}, {"reg_n", reg_n}};
  if (splits > 1) c.set("splits", splits);  // unsplit configs keep the text tuning caches already hold
  return c;
}

MatmulTiling MatmulTiling::from(const Config& c) {
  auto u = [&](const char* name) {
    int64_t v = c.get(name);
    if (v < 1 || v > 1024) throw std::invalid_argument(fmt::format("matmul config '{}': {} must be 1..1024", c.text(), name));
    return uint32_t(v);
  };
  if (c.has("matvec_slices")) {
    MatmulTiling t;
    t.matvec_slices = u("matvec_slices");
    t.unroll = c.has("unroll") ? u("unroll") : kMatvecUnroll;
    return t;
  }
  if (c.has("workgroup_matrix")) {
    if (c.get("workgroup_matrix") != 1)
      throw std::invalid_argument(fmt::format("matmul config '{}': workgroup_matrix must be 1", c.text()));
    MatmulTiling t{u("tile_m"), u("tile_n"), u("tile_k"), 1, 1};
    t.workgroup_matrix = true;
    t.unroll = u("unroll");
    return t;
  }
  if (c.has("warpgroups")) {
    MatmulTiling t{u("tile_m"), u("tile_n"), u("tile_k"), 1, 1};
    t.warpgroups = u("warpgroups");
    t.stages = u("stages");
    return t;
  }
  if (c.has("warps_m")) {
    MatmulTiling t{u("tile_m"), u("tile_n"), u("tile_k"), 1, 1};
    t.warps_m = u("warps_m");
    t.warps_n = u("warps_n");
    if (c.has("stages")) t.stages = u("stages");
    if (c.has("unroll")) t.unroll = u("unroll");
    if (c.has("producers")) t.producers = u("producers");
    if (c.has("lookahead")) t.lookahead = u("lookahead");
    if (c.has("results")) t.results = u("results");
    if (c.has("b_unpadded")) {
      if (c.get("b_unpadded") != 1)
        throw std::invalid_argument(fmt::format("matmul config '{}': b_unpadded must be 1", c.text()));
      t.b_unpadded = true;
    }
    return t;
  }
  MatmulTiling t{u("tile_m"), u("tile_n"), u("tile_k"), u("reg_m"), u("reg_n")};
  if (c.has("splits")) t.splits = u("splits");
  return t;
}

std::vector<MatmulTiling> matmul_candidates(const MatmulShape& s, Type t, const Limits& limits) {
  const bool f64 = t == Type::F64;
  std::vector<MatmulTiling> out{choose_matmul_tiling(s, t, limits)};
  // A block more than twice the (power-of-two rounded) extent only adds masked work.
  auto fits_extent = [](uint32_t tile, int64_t extent) { return tile <= std::max<uint32_t>(16, pow2_clamped(uint64_t(std::max<int64_t>(extent, 1)), 1, 1u << 30)); };
  // (tile_m, tile_n, reg_m, reg_n): square, 2:1 and 4:1 blocks of 64 to 512 invocations. The 4:1 ones keep 8x8
  // outputs per invocation where one extent is only 64 (a convolution with 64 channels).
  const uint32_t blocks[][4] = {{16, 16, 1, 1},  {32, 32, 2, 2},   {64, 32, 4, 2},   {32, 64, 2, 4},
                                {64, 64, 4, 4},  {64, 64, 8, 8},   {64, 64, 4, 2},   {128, 64, 8, 4},
                                {64, 128, 4, 8}, {128, 128, 8, 8}, {128, 128, 8, 4}, {64, 256, 8, 8},
                                {256, 64, 8, 8}, {128, 256, 8, 8}, {256, 128, 8, 8}};
  const uint32_t depths_f32[] = {8, 16, 32}, depths_f64[] = {4, 8, 16};
  for (const auto& b : blocks) {
    for (uint32_t k : f64 ? depths_f64 : depths_f32) {
      MatmulTiling tl{b[0], b[1], k, b[2], b[3]};
      const uint64_t shared = tiled_gemm_shared_bytes(tl, t);
      if (!fits_extent(tl.tile_m, s.m) || !fits_extent(tl.tile_n, s.n) || !fits_extent(tl.tile_k, s.k)) continue;
      if (tl.invocations() > limits.max_invocations || shared > limits.shared_bytes) continue;
      if (tl.tile_k * tl.reg_m * tl.reg_n > 1024) continue;
      if (std::find(out.begin(), out.end(), tl) == out.end()) out.push_back(tl);
    }
  }
  // Split-K for a long K: the small and medium blocks with 2 to 16 splits of at least 8 slices each.
  if (s.k >= 2048)
    for (MatmulTiling tl : {MatmulTiling{16, 16, 16, 1, 1}, MatmulTiling{64, 64, f64 ? 8u : 16u, 4, 4}})
      for (uint32_t splits : {2u, 4u, 8u, 16u}) {
        tl.splits = splits;
        if (!fits_extent(tl.tile_m, s.m) || !fits_extent(tl.tile_n, s.n) || tl.invocations() > limits.max_invocations)
          continue;
        if ((s.k + tl.tile_k - 1) / tl.tile_k < 8 * int64_t(splits)) continue;
        if (std::find(out.begin(), out.end(), tl) == out.end()) out.push_back(tl);
      }
  return out;
}

Val matmul_batch_offset(KernelBuilder& kb, const MatmulShape& s, Val b, const std::vector<int64_t>& strides) {
  Val off = kb.u32(0);
  Val rest = b;
  for (size_t i = s.batch.size(); i-- > 0;) {
    uint32_t size = index_u32(s.batch[i], "matmul batch dimension");
    if (size == 1) continue;
    Val idx = rest % size;
    rest = rest / size;
    if (strides[i] != 0) off = off + idx * index_u32(strides[i], "matmul batch stride");
  }
  return off;
}

std::string matmul_checked_name(const MatmulShape& s) {
  if ((s.a_transposed && !s.a_batch.empty()) || (s.b_transposed && !s.b_batch.empty()))
    throw std::invalid_argument("matmul: only a rank-2 operand can be read transposed");
  index_u32(s.m, "matmul M");
  index_u32(s.k, "matmul K");
  index_u32(s.n, "matmul N");
  index_u32(s.batch_count(), "matmul batch count");
  index_u32(s.batch_count() * s.m * s.n, "matmul result elements");
  int64_t a_elems = s.m * s.k, b_elems = s.k * s.n;
  for (int64_t d : s.a_batch) a_elems *= d;
  for (int64_t d : s.b_batch) b_elems *= d;
  index_u32(a_elems, "matmul A elements");
  index_u32(b_elems, "matmul B elements");
  return "matmul_" + s.text();
}

HeavyKernel matmul_kernel(const MatmulShape& s, Type t, const MatmulTiling& tl, bool row_sums) {
  std::string suffix = float_suffix(t, "matmul");
  if (tl.tensor_cores() || tl.warpgroup_mma() || tl.workgroup_matrix)
    throw std::invalid_argument("matmul: a tensor-core tiling goes to matmul_mma_kernel, matmul_wgmma_kernel or matmul_workgroup_mma_kernel");
  std::string name = matmul_checked_name(s);
  if (tl.tile_m % tl.reg_m || tl.tile_n % tl.reg_n || tl.tile_k == 0)
    throw std::invalid_argument(fmt::format("matmul: tiling {}x{}x{} with {}x{} per invocation is inconsistent",
                                            tl.tile_m, tl.tile_n, tl.tile_k, tl.reg_m, tl.reg_n));
  const uint32_t M = uint32_t(s.m), K = uint32_t(s.k), N = uint32_t(s.n), batches = uint32_t(s.batch_count());
  const uint32_t tiles_m = (M + tl.tile_m - 1) / tl.tile_m, tiles_n = (N + tl.tile_n - 1) / tl.tile_n;

  name += fmt::format("_t{}x{}x{}_r{}x{}", tl.tile_m, tl.tile_n, tl.tile_k, tl.reg_m, tl.reg_n);
  if (tl.splits > 1) name += fmt::format("_s{}", tl.splits);
  name += "_" + suffix;
  if (row_sums) name += "_rowsums";

  const uint32_t splits = tl.splits;
  if (splits < 1 || splits > 64) throw std::invalid_argument(fmt::format("matmul: splits must be 1..64, not {}", splits));
  if (row_sums && batches != 1) throw std::invalid_argument("matmul: row sums are for unbatched products");
  // Each split's partial sums: its products (every batch's), then (row_sums, unbatched) its sums of A's rows.
  const int64_t per_split = int64_t(batches) * s.m * s.n + (row_sums ? s.m : 0);
  index_u32(int64_t(splits) * per_split, "matmul partial sums");
  if (M == 0 || N == 0 || batches == 0) return empty_result(name);
  // Each split sums a whole number of K slices.
  const uint32_t chunk = splits == 1 ? K : ((K + splits - 1) / splits + tl.tile_k - 1) / tl.tile_k * tl.tile_k;

  KernelBuilder kb(name, tl.invocations());
  Buf A = kb.buffer("a", s.a_half.value_or(t), Access::Read);
  Buf B = kb.buffer("b", s.b_half.value_or(t), Access::Read);
  // Half operands widen as they load; the workgroup tiles and the sums stay in t.
  auto widened = [&](Val v) { return v.type() == t ? v : cast(v, t); };
  Buf C = kb.buffer(splits > 1 ? "partial_c" : "c", t, Access::Write);
  std::optional<Buf> sums;
  if (row_sums && splits == 1) sums = kb.buffer("row_sums", t, Access::Write);
  Val lid = kb.local_id();
  Val group = kb.group_id();

  Val tile_col = group % tiles_n;
  Val tile_row = (group / tiles_n) % tiles_m;
  // split * batches + batch: the partial sums are [splits][batches][M][N] (unsplit: the result itself).
  Val outer = group / (tiles_n * tiles_m);
  // Whole workgroups beyond the problem (a folded grid) skip everything, barriers included: the condition is
  // uniform across the workgroup.
  kb.if_(outer < batches * splits, [&] {
    Val batch = splits == 1 ? outer : batches == 1 ? kb.u32(0) : outer % batches;
    // The split's first k (no instruction for it unsplit: kir keeps every value it is given).
    Val k0 = splits == 1 ? kb.u32(0) : (batches == 1 ? outer : outer / batches) * chunk;
    Val a_base = matmul_batch_offset(kb, s, batch, s.a_batch_strides);
    Val b_base = matmul_batch_offset(kb, s, batch, s.b_batch_strides);
    // The batch's result, or the split's partial sums (of this batch).
    Val c_base = row_sums ? outer * uint32_t(per_split) : outer * index_u32(s.m * s.n, "matmul result elements");
    // k < chunk and k0 + k < K: within this split and the product (the first is implied when unsplit).
    auto k_in = [&](Val k, Val gk) { return splits > 1 ? (k < chunk) & (gk < K) : gk < K; };
    GemmOperands io;
    // Out-of-range elements read a clamped address and are replaced by zero, so no branch is needed. Extents that
    // are multiples of their tile are never exceeded (GemmOperands): those checks go, 4 to 5 instructions an element
    // in the staging of large products (split K keeps its checks: a split's range need not be whole slices).
    const bool rows_whole = M % tl.tile_m == 0, cols_whole = N % tl.tile_n == 0;
    const bool k_whole = splits == 1 && K % tl.tile_k == 0;
    auto zero_outside = [&](std::optional<Val> inside, Val v) { return inside ? select(*inside, v, kb.constant(t, 0)) : v; };
    auto both = [](std::optional<Val> x, std::optional<Val> y) -> std::optional<Val> {
      if (x && y) return *x & *y;
      return x ? x : y;
    };
    // Where element (r, k) of A, or (k, c) of B, lies in its buffer, and the check that it is inside the product (none
    // where the extents are whole tiles). With `lanes` 4 it is the first of 4 along the operand's contiguous direction,
    // clamped so that all four stay in bounds.
    struct At {
      Val index;
      std::optional<Val> inside;
    };
    auto a_at = [&](Val r, Val k, uint32_t lanes) -> At {
      Val gk = splits > 1 ? k0 + k : k;
      const uint32_t r_last = M - (s.a_transposed ? lanes : 1), k_last = K - (s.a_transposed ? 1 : lanes);
      Val rc = rows_whole ? r : min(r, r_last), kc = k_whole ? gk : min(gk, k_last);
      return {a_base + (s.a_transposed ? kc * M + rc : rc * K + kc),
              both(rows_whole ? std::nullopt : std::optional<Val>(r < M), k_whole ? std::nullopt : std::optional<Val>(k_in(k, gk)))};
    };
    auto b_at = [&](Val k, Val c, uint32_t lanes) -> At {
      Val gk = splits > 1 ? k0 + k : k;
      const uint32_t k_last = K - (s.b_transposed ? lanes : 1), c_last = N - (s.b_transposed ? 1 : lanes);
      Val kc = k_whole ? gk : min(gk, k_last), cc = cols_whole ? c : min(c, c_last);
      return {b_base + (s.b_transposed ? cc * K + kc : kc * N + cc),
              both(k_whole ? std::nullopt : std::optional<Val>(k_in(k, gk)), cols_whole ? std::nullopt : std::optional<Val>(c < N))};
    };
    io.a = [&](Val r, Val k) {
      At at = a_at(r, k, 1);
      return zero_outside(at.inside, widened(A[at.index]));
    };
    io.b = [&](Val k, Val c) {
      At at = b_at(k, c, 1);
      return zero_outside(at.inside, widened(B[at.index]));
    };
    // 16-byte reads where the operand is fp32 (not widened) and the extent along its contiguous direction is a multiple
    // of 4: rows (and batches) then start on 16 bytes, and 4 aligned neighbours are all inside an extent or all
    // outside it, so one clamp and one check serve the four. 2 reads replace 8 on the 8x8 tiling's staging.
    auto four = [&](const At& at, const Buf& buf) {
      std::vector<Val> v = buf.load_vector(at.index, 4);
      for (Val& x : v) x = zero_outside(at.inside, x);
      return v;
    };
    if (!s.a_half && dtype_bytes(t) == 4 && (s.a_transposed ? M : K) % 4 == 0)
      io.a4 = [&](Val r, Val k) { return four(a_at(r, k, 4), A); };
    if (!s.b_half && dtype_bytes(t) == 4 && (s.b_transposed ? K : N) % 4 == 0)
      io.b4 = [&](Val k, Val c) { return four(b_at(k, c, 4), B); };
    // Stage each operand along its contiguous direction.
    io.a_m_fastest = s.a_transposed;
    io.b_k_fastest = s.b_transposed;
    io.store = [&](Val r, Val c, Val v) { C[c_base + r * N + c] = v; };
    // The first block column's workgroups store the row sums (every block column's are the same).
    if (row_sums)
      io.a_row_sum = [&](Val r, Val sum) {
        kb.if_(tile_col == 0u, [&] {
          if (sums) (*sums)[r] = sum;
          else C[c_base + M * N + r] = sum;
        });
      };
    emit_tiled_gemm(kb, t, tl, M, N, chunk, tile_row * tl.tile_m, tile_col * tl.tile_n, lid, io);
  });

  uint64_t groups = uint64_t(batches) * splits * tiles_m * tiles_n;
  return {kb.finish(), groups};
}

HeavyKernel matmul_split_sum_kernel(const MatmulShape& s, Type t, const MatmulTiling& tl, bool row_sums) {
  const uint32_t products = index_u32(s.batch_count() * s.m * s.n, "matmul result elements");
  const std::string name =
      fmt::format("matmul_sum_{}_s{}_{}{}", s.text(), tl.splits, float_suffix(t, "matmul"), row_sums ? "_rowsums" : "");
  if (!row_sums) return split_sum_kernel(name, t, products, tl.splits);
  return split_sum_kernel(name, t, index_u32(s.m * s.n + s.m, "matmul partial sums"), tl.splits, products);
}

}  // namespace spire::lowering::heavy
