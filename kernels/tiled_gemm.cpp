#include "kernels/tiled_gemm.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

GemmLayout tiled_gemm_layout(const MatmulTiling& tl, Type t) {
  GemmLayout l;
  const uint32_t threads_n = tl.tile_n / tl.reg_n, threads_m = tl.tile_m / tl.reg_m;
  l.vector_loads = dtype_bytes(t) == 4 && tl.reg_m % 4 == 0 && tl.reg_n % 4 == 0;
  l.patches = tl.invocations() % 32 == 0 && threads_n % 8 == 0 && threads_m % 4 == 0;
  // A's slice is stored k-major (a_tile[kk][row]) so the inner loop reads a row of it per kk. Padding keeps the
  // transposing store off a single memory bank: one element, or four where rows must stay 16-byte aligned for vector
  // loads (with 8-deep slices, 32 consecutive invocations then still store to 32 distinct banks).
  l.a_ld = tl.tile_m + (l.vector_loads ? 4 : 1);
  return l;
}

uint64_t tiled_gemm_shared_bytes(const MatmulTiling& tl, Type t) {
  return uint64_t(tl.tile_k) * (tiled_gemm_layout(tl, t).a_ld + tl.tile_n) * dtype_bytes(t);
}

GemmStaging declare_gemm_staging(KernelBuilder& kb, Type t, const MatmulTiling& tl) {
  return {kb.shared("a_tile", t, tl.tile_k * tiled_gemm_layout(tl, t).a_ld), kb.shared("b_tile", t, tl.tile_k * tl.tile_n)};
}

void emit_tiled_gemm(KernelBuilder& kb, Type t, const MatmulTiling& tl, uint32_t M, uint32_t N, uint32_t K, Val row0,
                     Val col0, Val lid, const GemmOperands& io, const std::optional<GemmStaging>& staging) {
  const uint32_t threads = tl.invocations();
  const uint32_t threads_n = tl.tile_n / tl.reg_n, threads_m = tl.tile_m / tl.reg_m;
  const uint32_t k_tiles = (K + tl.tile_k - 1) / tl.tile_k;
  const GemmLayout layout = tiled_gemm_layout(tl, t);
  const uint32_t a_ld = layout.a_ld;
  const GemmStaging stage = staging ? *staging : declare_gemm_staging(kb, t, tl);
  Shared a_tile = stage.a_tile, b_tile = stage.b_tile;
  // The invocation's place (tx, ty) in the threads_n x threads_m grid. In patches, each subgroup of 32 covers 8 x 4
  // of it (8 column groups, 4 row groups) rather than two whole rows of 16: it then reads 8 distinct pieces of B's
  // row and 4 of A's per step instead of 16 and 2, fewer shared-memory wavefronts for the same products (on an H100
  // the 128x128 fp32 GEMM went from 28.7 to 28.3 ms by this alone, tools/gpu/sgemm_probe.cu).
  Val tx, ty;
  if (layout.patches) {
    Val lane = lid % 32u, subgroup = lid / 32u;
    const uint32_t across = threads_n / 8;  // patches per row of the grid
    tx = subgroup % across * 8u + lane % 8u;
    ty = subgroup / across * 4u + lane / 8u;
  } else {
    tx = lid % threads_n;
    ty = lid / threads_n;
  }
  // Which rows and columns of the block an invocation's outputs are: strided by the grid (neighbours read
  // neighbouring elements), or, with vector loads, in groups of 4 contiguous ones strided by 4 grids, so that each
  // group of A's column and B's row is one 16-byte shared load.
  auto out_row = [&](uint32_t i) {
    return layout.vector_loads ? ty * 4u + ((i / 4) * threads_m * 4 + i % 4) : ty + i * threads_m;
  };
  auto out_col = [&](uint32_t j) {
    return layout.vector_loads ? tx * 4u + ((j / 4) * threads_n * 4 + j % 4) : tx + j * threads_n;
  };

  std::vector<Var> acc;
  for (uint32_t i = 0; i < tl.reg_m * tl.reg_n; ++i) acc.push_back(kb.var(fmt::format("acc{}", i), kb.constant(t, 0)));

  // Staging is software-pipelined: the invocation's share of slice kt + 1 is loaded from global memory into
  // registers before the products of slice kt, so the loads' latency hides behind the arithmetic (the GPU does
  // not move loads across the barriers itself).
  const uint32_t a_elems = tl.tile_m * tl.tile_k, b_elems = tl.tile_k * tl.tile_n;
  // Each staging round moves one unit per invocation: an element, or 4 consecutive ones along the operand's contiguous
  // direction where it offers vector reads (GemmOperands::a4 / b4) and the tile's extent along it holds whole fours.
  const uint32_t a_lanes = io.a4 && (io.a_m_fastest ? tl.tile_m : tl.tile_k) % 4 == 0 ? 4 : 1;
  const uint32_t b_lanes = io.b4 && (io.b_k_fastest ? tl.tile_k : tl.tile_n) % 4 == 0 ? 4 : 1;
  const uint32_t a_units = a_elems / a_lanes, b_units = b_elems / b_lanes;
  struct Staged {
    std::vector<Var> values;  // the unit's elements
    uint32_t base;            // this invocation's unit is lid + base of the slice's units
    bool partial;             // the last round, where only some invocations have a unit
  };
  std::vector<Staged> a_staged, b_staged;
  // Two workgroups per core, so that one multiplies while the other waits at its barriers, where the registers this
  // body needs (accumulators, one slice step's operands, the staged look-ahead, ~40 for addresses and loop state;
  // 64-bit values take two) leave room for two in a 64K register file. On an H100 ptxas takes 130 registers for the
  // 8x8 tiling unasked (one 256-invocation workgroup per core); capped at 128 it needs no spills, and fp32 8192^3
  // went from 39.1 to 34.8 ms (docs/PERFORMANCE.md).
  const uint32_t words = dtype_bytes(t) > 4 ? 2 : 1;
  const uint32_t a_staged_count = (a_elems + threads - 1) / threads;
  const uint32_t staged = a_staged_count + (b_elems + threads - 1) / threads;
  const uint32_t registers =
      words * (tl.reg_m * tl.reg_n + tl.reg_m + tl.reg_n + staged + (io.a_row_sum ? a_staged_count : 0)) + 40;
  if (threads >= 128 && uint64_t(registers) * threads * 2 <= 65536) kb.request_workgroups_per_core(2);
  // Where element idx of A's slice comes from: consecutive invocations take consecutive k (coalesced for a
  // row-major A), or consecutive rows for a transposed one. A unit's further elements follow along that direction.
  auto a_rc = [&](Val idx) {
    return io.a_m_fastest ? std::pair{idx % tl.tile_m, idx / tl.tile_m} : std::pair{idx / tl.tile_k, idx % tl.tile_k};
  };
  // B's: consecutive columns, or consecutive k when that is B's contiguous direction.
  auto b_rc = [&](Val idx) {
    return io.b_k_fastest ? std::pair{idx % tl.tile_k, idx / tl.tile_k} : std::pair{idx / tl.tile_n, idx % tl.tile_n};
  };
  auto guarded = [&](const Staged& st, uint32_t units, const std::function<void()>& body) {
    if (st.partial) kb.if_(lid + st.base < units, body);
    else body();
  };
  auto assign = [](Staged& st, const std::vector<Val>& v) {
    for (size_t i = 0; i < v.size(); ++i) st.values[i] = v[i];
  };
  auto load_slice = [&](Val k0) {
    for (Staged& st : a_staged)
      guarded(st, a_units, [&] {
        auto [r, c] = a_rc((lid + st.base) * a_lanes);
        assign(st, a_lanes > 1 ? io.a4(row0 + r, k0 + c) : std::vector<Val>{io.a(row0 + r, k0 + c)});
      });
    for (Staged& st : b_staged)
      guarded(st, b_units, [&] {
        auto [r, c] = b_rc((lid + st.base) * b_lanes);
        assign(st, b_lanes > 1 ? io.b4(k0 + r, col0 + c) : std::vector<Val>{io.b(k0 + r, col0 + c)});
      });
  };
  auto stage_vars = [&](std::vector<Staged>& out, uint32_t units, uint32_t lanes, const char* name) {
    for (uint32_t base = 0; base < units; base += threads) {
      Staged st{{}, base, base + threads > units};
      for (uint32_t i = 0; i < lanes; ++i)
        st.values.push_back(kb.var(fmt::format("{}{}_{}", name, out.size(), i), kb.constant(t, 0)));
      out.push_back(std::move(st));
    }
  };
  // Row sums of A (GemmOperands::a_row_sum): each invocation adds every staged element of A as it stores it, in
  // accumulators shaped like its staged units, so that the sum costs an add per element and no workgroup-memory reads
  // in the loop; at the end the accumulated slice goes through workgroup memory once and its rows are added.
  std::vector<Staged> a_sums;
  if (io.a_row_sum) stage_vars(a_sums, a_units, a_lanes, "a_sum");
  // Stores a unit of A's slice (staged values, or the row sums' accumulators) where the products read it.
  auto store_a = [&](const Staged& st) {
    guarded(st, a_units, [&] {
      auto [r, c] = a_rc((lid + st.base) * a_lanes);
      Val at = c * a_ld + r;
      for (uint32_t i = 0; i < a_lanes; ++i) a_tile[at + (io.a_m_fastest ? i : i * a_ld)] = st.values[i].get();
    });
  };
  if (k_tiles > 0) {
    stage_vars(a_staged, a_units, a_lanes, "a_next");
    stage_vars(b_staged, b_units, b_lanes, "b_next");
    load_slice(kb.u32(0));
    // One slice: store the staged look-ahead into workgroup memory, load the next slice's (`look_ahead`), and
    // multiply.
    auto slice = [&](const std::function<void()>& look_ahead) {
      for (size_t u = 0; u < a_staged.size(); ++u) {
        const Staged& st = a_staged[u];
        store_a(st);
        // Units an invocation does not have hold zeros (never loaded), so the sums need no guard.
        if (io.a_row_sum)
          for (uint32_t i = 0; i < a_lanes; ++i) a_sums[u].values[i] += st.values[i].get();
      }
      for (const Staged& st : b_staged)
        guarded(st, b_units, [&] {
          auto [r, c] = b_rc((lid + st.base) * b_lanes);
          Val at = r * tl.tile_n + c;
          for (uint32_t i = 0; i < b_lanes; ++i) b_tile[at + (io.b_k_fastest ? i * tl.tile_n : i)] = st.values[i].get();
        });
      kb.barrier();
      look_ahead();
      // The slice's products, unrolled: each invocation's outputs are strided by the thread grid so that
      // neighbouring invocations read neighbouring shared elements and write neighbouring outputs.
      for (uint32_t kk = 0; kk < tl.tile_k; ++kk) {
        std::vector<Val> a_vals, b_vals;
        if (layout.vector_loads) {
          for (uint32_t i = 0; i < tl.reg_m; i += 4)
            for (Val v : a_tile.load_vector(ty * 4u + (kk * a_ld + (i / 4) * threads_m * 4), 4)) a_vals.push_back(v);
          for (uint32_t j = 0; j < tl.reg_n; j += 4)
            for (Val v : b_tile.load_vector(tx * 4u + (kk * tl.tile_n + (j / 4) * threads_n * 4), 4)) b_vals.push_back(v);
        } else {
          for (uint32_t i = 0; i < tl.reg_m; ++i) a_vals.push_back(a_tile[out_row(i) + kk * a_ld]);
          for (uint32_t j = 0; j < tl.reg_n; ++j) b_vals.push_back(b_tile[out_col(j) + kk * tl.tile_n]);
        }
        for (uint32_t i = 0; i < tl.reg_m; ++i)
          for (uint32_t j = 0; j < tl.reg_n; ++j) acc[i * tl.reg_n + j] = fma(a_vals[i], b_vals[j], acc[i * tl.reg_n + j]);
      }
      kb.barrier();
    };
    // The look-ahead never reads past the last slice, so operands are read past K only within a partial last slice,
    // and a product whose extents are multiples of the tile needs no edge checks (GemmOperands). Where both operands
    // stage by 16-byte reads the look-ahead is a few instructions behind a uniform branch. Elsewhere (a convolution's
    // gathered operand: address arithmetic per element) it stays unconditional, reloading the last slice at the end,
    // so that the compiler interleaves it with the products, which it does not across a branch. Measured on an H100
    // (docs/PERFORMANCE.md): the clamped index everywhere cost fp32 8192^3 10%; the branch everywhere cost the
    // 64x64-block convolutions up to 40%; peeling the last slice off instead cost resnet18 on vulkan:0 15% (twice the
    // unrolled code).
    if (a_lanes == 4 && b_lanes == 4) {
      kb.for_(kb.u32(0), kb.u32(k_tiles), [&](Val kt) {
        slice([&] { kb.if_(kt + 1u < k_tiles, [&] { load_slice((kt + 1u) * tl.tile_k); }); });
      });
    } else {
      kb.for_(kb.u32(0), kb.u32(k_tiles), [&](Val kt) {
        slice([&] { load_slice(min(kt + 1u, kb.u32(k_tiles - 1)) * tl.tile_k); });
      });
    }
  }

  if (io.a_row_sum) {
    // The loop ended at a barrier (or never touched workgroup memory): A's tile is free for the accumulated slice.
    for (const Staged& st : a_sums) store_a(st);
    kb.barrier();
    for (uint32_t first = 0; first < tl.tile_m; first += threads) {
      Val r = lid + first;
      kb.if_((r < tl.tile_m) & (row0 + r < M), [&] {
        Var sum = kb.var("a_row_sum", kb.constant(t, 0));
        for (uint32_t kk = 0; kk < tl.tile_k; ++kk) sum += a_tile[r + kk * a_ld];
        io.a_row_sum(row0 + r, sum.get());
      });
    }
  }

  for (uint32_t i = 0; i < tl.reg_m; ++i) {
    Val r = row0 + out_row(i);
    for (uint32_t j = 0; j < tl.reg_n; ++j) {
      Val c = col0 + out_col(j);
      kb.if_((r < M) & (c < N), [&] { io.store(r, c, acc[i * tl.reg_n + j].get()); });
    }
  }
}

}  // namespace spire::lowering::heavy
