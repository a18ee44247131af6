#include "lowering/heavy_kernels/tiled_gemm.h"

#include <functional>
#include <string>
#include <utility>
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

  // Staging is software-pipelined: the invocation's share of slice kt + 1 is loaded from global memory into
  // registers before the products of slice kt, so the loads' latency hides behind the arithmetic (the GPU does
  // not move loads across the barriers itself). Loads past K return zero (GemmOperands), so the last iteration's
  // look-ahead needs no branch.
  const uint32_t a_elems = tl.tile_m * tl.tile_k, b_elems = tl.tile_k * tl.tile_n;
  struct Staged {
    Var value;
    uint32_t base;  // this invocation's element is lid + base of the slice
    bool partial;   // the last round, where only some invocations have an element
  };
  std::vector<Staged> a_staged, b_staged;
  // Two workgroups per core, so that one multiplies while the other waits at its barriers, where the registers this
  // body needs (accumulators, one slice step's operands, the staged look-ahead, ~40 for addresses and loop state;
  // 64-bit values take two) leave room for two in a 64K register file. On an H100 ptxas takes 130 registers for the
  // 8x8 tiling unasked (one 256-invocation workgroup per core); capped at 128 it needs no spills, and fp32 8192^3
  // went from 39.1 to 34.8 ms (docs/PERFORMANCE.md).
  const uint32_t words = type_bytes(t) > 4 ? 2 : 1;
  const uint32_t staged = (a_elems + threads - 1) / threads + (b_elems + threads - 1) / threads;
  const uint32_t registers = words * (tl.reg_m * tl.reg_n + tl.reg_m + tl.reg_n + staged) + 40;
  if (threads >= 128 && uint64_t(registers) * threads * 2 <= 65536) kb.request_workgroups_per_core(2);
  // Where element idx of A's slice comes from: consecutive invocations take consecutive k (coalesced for a
  // row-major A), or consecutive rows for a transposed one.
  auto a_rc = [&](Val idx) {
    return io.a_m_fastest ? std::pair{idx % tl.tile_m, idx / tl.tile_m} : std::pair{idx / tl.tile_k, idx % tl.tile_k};
  };
  // B's: consecutive columns, or consecutive k when that is B's contiguous direction.
  auto b_rc = [&](Val idx) {
    return io.b_k_fastest ? std::pair{idx % tl.tile_k, idx / tl.tile_k} : std::pair{idx / tl.tile_n, idx % tl.tile_n};
  };
  auto guarded = [&](const Staged& st, uint32_t elems, const std::function<void()>& body) {
    if (st.partial) kb.if_(lid + st.base < elems, body);
    else body();
  };
  auto load_slice = [&](Val k0) {
    for (Staged& st : a_staged)
      guarded(st, a_elems, [&] { auto [r, c] = a_rc(lid + st.base); st.value = io.a(row0 + r, k0 + c); });
    for (Staged& st : b_staged)
      guarded(st, b_elems, [&] { auto [r, c] = b_rc(lid + st.base); st.value = io.b(k0 + r, col0 + c); });
  };
  if (k_tiles > 0) {
    for (uint32_t base = 0; base < a_elems; base += threads)
      a_staged.push_back({kb.var(fmt::format("a_next{}", a_staged.size()), kb.constant(t, 0)), base, base + threads > a_elems});
    for (uint32_t base = 0; base < b_elems; base += threads)
      b_staged.push_back({kb.var(fmt::format("b_next{}", b_staged.size()), kb.constant(t, 0)), base, base + threads > b_elems});
    load_slice(kb.u32(0));
    kb.for_(kb.u32(0), kb.u32(k_tiles), [&](Val kt) {
      for (const Staged& st : a_staged)
        guarded(st, a_elems, [&] { auto [r, c] = a_rc(lid + st.base); a_tile[c * a_ld + r] = st.value.get(); });
      for (const Staged& st : b_staged)
        guarded(st, b_elems, [&] { auto [r, c] = b_rc(lid + st.base); b_tile[r * tl.tile_n + c] = st.value.get(); });
      kb.barrier();
      load_slice((kt + 1u) * tl.tile_k);
      // The slice's products, unrolled: each invocation's outputs are strided by the thread grid so that
      // neighbouring invocations read neighbouring shared elements and write neighbouring outputs.
      for (uint32_t kk = 0; kk < tl.tile_k; ++kk) {
        std::vector<Val> a_vals, b_vals;
        for (uint32_t i = 0; i < tl.reg_m; ++i) a_vals.push_back(a_tile[ty + (kk * a_ld + i * threads_m)]);
        for (uint32_t j = 0; j < tl.reg_n; ++j) b_vals.push_back(b_tile[tx + (kk * tl.tile_n + j * threads_n)]);
        for (uint32_t i = 0; i < tl.reg_m; ++i)
          for (uint32_t j = 0; j < tl.reg_n; ++j) acc[i * tl.reg_n + j] = fma(a_vals[i], b_vals[j], acc[i * tl.reg_n + j]);
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
