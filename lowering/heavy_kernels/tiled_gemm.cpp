#include "lowering/heavy_kernels/tiled_gemm.h"

#include <string>
#include <vector>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

void emit_tiled_gemm(KernelBuilder& kb, Type t, const MatmulTiling& tl, uint32_t M, uint32_t N, uint32_t K, Val row0,
                     Val col0, Val lid, const GemmOperands& io) {
  const uint32_t threads = tl.invocations();
  const uint32_t threads_n = tl.tile_n / tl.reg_n, threads_m = tl.tile_m / tl.reg_m;
  const uint32_t k_tiles = (K + tl.tile_k - 1) / tl.tile_k;
  // A's slice is stored k-major (a_tile[kk][row]) so the inner loop reads a row of it per kk; one element of
  // padding per row keeps the transposing store from hitting a single memory bank.
  const uint32_t a_ld = tl.tile_m + 1;
  Shared a_tile = kb.shared("a_tile", t, tl.tile_k * a_ld);
  Shared b_tile = kb.shared("b_tile", t, tl.tile_k * tl.tile_n);
  Val tx = lid % threads_n;
  Val ty = lid / threads_n;

  std::vector<Var> acc;
  for (uint32_t i = 0; i < tl.reg_m * tl.reg_n; ++i) acc.push_back(kb.var(fmt::format("acc{}", i), kb.constant(t, 0)));

  if (k_tiles > 0) {
    kb.for_(kb.u32(0), kb.u32(k_tiles), [&](Val kt) {
      Val k0 = kt * tl.tile_k;
      // Stage A[row0 .. +tile_m, k0 .. +tile_k]: consecutive invocations take consecutive k (coalesced for a
      // row-major A), or consecutive rows for a transposed one.
      const uint32_t a_elems = tl.tile_m * tl.tile_k;
      for (uint32_t base = 0; base < a_elems; base += threads) {
        auto stage = [&] {
          Val idx = lid + base;
          Val r = io.a_m_fastest ? idx % tl.tile_m : idx / tl.tile_k;
          Val c = io.a_m_fastest ? idx / tl.tile_m : idx % tl.tile_k;
          a_tile[c * a_ld + r] = io.a(row0 + r, k0 + c);
        };
        if (base + threads <= a_elems) stage();
        else kb.if_(lid + base < a_elems, stage);
      }
      // Stage B[k0 .. +tile_k, col0 .. +tile_n]: consecutive invocations take consecutive columns, or
      // consecutive k when that is B's contiguous direction.
      const uint32_t b_elems = tl.tile_k * tl.tile_n;
      for (uint32_t base = 0; base < b_elems; base += threads) {
        auto stage = [&] {
          Val idx = lid + base;
          if (io.b_k_fastest) {
            Val r = idx % tl.tile_k, c = idx / tl.tile_k;
            b_tile[r * tl.tile_n + c] = io.b(k0 + r, col0 + c);
          } else {
            Val r = idx / tl.tile_n, c = idx % tl.tile_n;
            b_tile[idx] = io.b(k0 + r, col0 + c);
          }
        };
        if (base + threads <= b_elems) stage();
        else kb.if_(lid + base < b_elems, stage);
      }
      kb.barrier();
      // The slice's products, unrolled: each invocation's outputs are strided by the thread grid so that
      // neighbouring invocations read neighbouring shared elements and write neighbouring outputs.
      for (uint32_t kk = 0; kk < tl.tile_k; ++kk) {
        std::vector<Val> a_vals, b_vals;
        for (uint32_t i = 0; i < tl.reg_m; ++i) a_vals.push_back(a_tile[ty + (kk * a_ld + i * threads_m)]);
        for (uint32_t j = 0; j < tl.reg_n; ++j) b_vals.push_back(b_tile[tx + (kk * tl.tile_n + j * threads_n)]);
        for (uint32_t i = 0; i < tl.reg_m; ++i)
          for (uint32_t j = 0; j < tl.reg_n; ++j) acc[i * tl.reg_n + j] += a_vals[i] * b_vals[j];
      }
      kb.barrier();
    });
  }

  for (uint32_t i = 0; i < tl.reg_m; ++i) {
    Val r = row0 + ty + i * threads_m;
    for (uint32_t j = 0; j < tl.reg_n; ++j) {
      Val c = col0 + tx + j * threads_n;
      kb.if_((r < M) & (c < N), [&] { io.store(r, c, acc[i * tl.reg_n + j].get()); });
    }
  }
}

}  // namespace spire::lowering::heavy
