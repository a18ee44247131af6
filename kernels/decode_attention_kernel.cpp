#include "kernels/decode_attention_kernel.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "kernels/workgroup_reduce.h"

namespace spire::lowering::heavy {

using namespace kir;

namespace {

uint64_t type_bytes(Type t) { return t == Type::F64 ? 8 : 4; }

// Columns of V a pass of phase 3 covers (one an invocation), and the slices of keys the workgroup splits into.
uint32_t value_columns(const DecodeAttentionShape& s, uint32_t wg) { return uint32_t(std::min<int64_t>(s.value_depth, wg)); }

// Elements of K an invocation reads at once: 4 where a key's row starts on 4 elements of 32 or 16 bits (kir's vector
// loads), else 1.
uint32_t key_lanes(const DecodeAttentionShape& s, Type t) {
  return s.depth % 4 == 0 && (t != Type::F64 || s.k_half) ? 4 : 1;
}

}  // namespace

std::string DecodeAttentionShape::text() const {
  std::string t = fmt::format("b{}_r{}_l{}_d{}_dv{}", batches, rows, keys, depth, value_depth);
  for (const auto& [name, half] : {std::pair{"q", q_half}, std::pair{"k", k_half}, std::pair{"v", v_half}})
    if (half) t += fmt::format("_{}{}", name, dtype_name(*half));
  return t;
}

uint64_t decode_attention_shared_bytes(const DecodeAttentionShape& s, Type t, uint32_t wg) {
  // The queries, the scores, and one partial sum per row and invocation (which the reductions use as their scratch).
  return uint64_t(s.rows) * (uint64_t(s.depth) + uint64_t(s.keys) + wg) * type_bytes(t);
}

bool decode_attention_fits(const DecodeAttentionShape& s, Type t) {
  return s.rows >= 1 && s.rows <= kDecodeAttentionMostRows && s.batches >= 1 && s.keys >= 1 && s.depth >= 1 &&
         s.value_depth >= 1 &&
         decode_attention_shared_bytes(s, t, kDecodeAttentionWorkgroup) <= kDecodeAttentionSharedBytes;
}

HeavyKernel decode_attention_kernel(const DecodeAttentionShape& s, Type t, uint32_t wg, uint32_t subgroup,
                                    const AttentionScore& score, AttentionCacheWrites writes) {
  const std::string name = fmt::format("decode_attention_{}_{}{}{}", s.text(), float_suffix(t, "attention"),
                                       wg == kDecodeAttentionWorkgroup ? "" : fmt::format("_wg{}", wg),
                                       writes.key || writes.value
                                           ? fmt::format("_writes_{}{}", writes.key ? "k" : "", writes.value ? "v" : "")
                                           : "");
  if (!decode_attention_fits(s, t))
    throw std::invalid_argument(fmt::format("{}: takes 1 to {} queries a batch whose scores fit {} bytes of workgroup "
                                            "memory", name, kDecodeAttentionMostRows, kDecodeAttentionSharedBytes));
  if (wg < 32 || wg > 1024 || (wg & (wg - 1)) != 0)
    throw std::invalid_argument(fmt::format("{}: a workgroup of {} invocations (a power of two, 32 to 1024)", name, wg));
  for (int64_t extent : {s.batches * s.rows * s.keys, s.batches * s.keys * s.depth, s.batches * s.keys * s.value_depth,
                         s.batches * s.rows * s.depth, s.batches * s.rows * s.value_depth})
    index_u32(extent, "attention extents");
  const uint32_t B = uint32_t(s.batches), R = uint32_t(s.rows), L = uint32_t(s.keys), D = uint32_t(s.depth);
  const uint32_t Dv = uint32_t(s.value_depth);
  const uint32_t lanes = key_lanes(s, t), C = value_columns(s, wg), slices = wg / C;

  KernelBuilder kb(name, wg);
  Buf q = kb.buffer("q", s.q_half.value_or(t), Access::Read);
  Buf k = kb.buffer("k", s.k_half.value_or(t), writes.key ? Access::ReadWrite : Access::Read);
  Buf v = kb.buffer("v", s.v_half.value_or(t), writes.value ? Access::ReadWrite : Access::Read);
  Buf o = kb.buffer("o", t, Access::Write);
  // The rows written and their positions.
  std::optional<Buf> key_row, key_slot, value_row, value_slot;
  if (writes.key) {
    key_row = kb.buffer("key_row", s.k_half.value_or(t), Access::Read);
    key_slot = kb.buffer("key_slot", Type::I32, Access::Read);
  }
  if (writes.value) {
    value_row = kb.buffer("value_row", s.v_half.value_or(t), Access::Read);
    value_slot = kb.buffer("value_slot", Type::I32, Access::Read);
  }
  Shared queries = kb.shared("queries", t, R * D);
  Shared scores = kb.shared("scores", t, R * L);
  Shared partial = kb.shared("partial", t, R * wg);
  WorkgroupReduce reduce(kb, wg, reduce_subgroup_size(subgroup, wg, t));
  auto to_t = [&](Val x) { return x.type() == t ? x : cast(x, t); };
  kb.if_(kb.group_id() < B, [&] {  // uniform: a folded grid's extra workgroups skip everything
    Val b = kb.group_id(), lid = kb.local_id(), e = reduce.element();
    // The new rows into the caches: this batch's row, which only this workgroup reads (after the barrier below, which
    // orders buffer memory too where a buffer is written: kir's barrier).
    auto write_row = [&](const Buf& cache, const Buf& row, const Buf& slot, uint32_t depth) {
      Val at = slot[0u].load();
      kb.if_((at >= 0) & (at < int32_t(L)), [&] {
        Val base = (b * L + cast(at, Type::U32)) * depth;
        kb.for_(lid, kb.u32(depth), kb.u32(wg), [&](Val d) { cache[base + d] = row[b * depth + d].load(); });
      });
    };
    if (writes.key) write_row(k, *key_row, *key_slot, D);
    if (writes.value) write_row(v, *value_row, *value_slot, Dv);
    kb.for_(lid, kb.u32(R * D), kb.u32(wg), [&](Val i) { queries[i] = to_t(q[b * (R * D) + i].load()); });
    kb.barrier();

    // 1. Scores: this invocation's keys, every row's dot product with each.
    kb.for_(lid, kb.u32(L), kb.u32(wg), [&](Val j) {
      std::vector<Var> dot;
      for (uint32_t r = 0; r < R; ++r) dot.push_back(kb.var(fmt::format("dot{}", r), kb.constant(t, 0)));
      Val row = (b * L + j) * D;
      kb.for_(kb.u32(0), kb.u32(D), kb.u32(lanes), [&](Val d) {
        std::vector<Val> key;
        if (lanes == 1) key.push_back(k[row + d].load());
        else if (s.k_half) key = k.load_vector_widened(row + d, lanes);
        else key = k.load_vector(row + d, lanes);
        for (uint32_t l = 0; l < lanes; ++l)
          for (uint32_t r = 0; r < R; ++r) dot[r] += queries[r * D + d + l].load() * to_t(key[l]);
      });
      for (uint32_t r = 0; r < R; ++r) {
        Val at = (b * R + r) * L + j;
        scores[r * L + j] = score ? score(kb, at, dot[r].get()) : dot[r].get();
      }
    });
    kb.barrier();

    // 2. Each row's maximum and sum of exponentials; the exponentials replace the scores.
    std::vector<Val> inverse_sum;
    for (uint32_t r = 0; r < R; ++r) {
      Var most = kb.var(fmt::format("most{}", r), kb.constant(t, -std::numeric_limits<double>::infinity()));
      kb.for_(e, kb.u32(L), kb.u32(wg), [&](Val j) { most = max(most.get(), scores[r * L + j].load()); });
      reduce.reduce(partial, most.get(), TreeOp::Max);
      Val row_max = partial[0u].load();
      kb.barrier();  // every invocation has read the maximum before the sum's reduction writes the scratch
      Var sum = kb.var(fmt::format("sum{}", r), kb.constant(t, 0));
      kb.for_(e, kb.u32(L), kb.u32(wg), [&](Val j) {
        Val x = exp(scores[r * L + j].load() - row_max);
        scores[r * L + j] = x;
        sum += x;
      });
      reduce.reduce(partial, sum.get(), TreeOp::Sum);
      inverse_sum.push_back(kb.constant(t, 1.0) / partial[0u].load());
      kb.barrier();  // (the exponentials too are complete past this barrier)
    }

    // 3. The weighted values: C neighbouring columns a slice, the slices' sums added in slice order.
    Val slice = lid / C, column = lid % C;
    for (uint32_t first = 0; first < Dv; first += C) {
      Val col = column + first;
      std::vector<Var> acc;
      for (uint32_t r = 0; r < R; ++r) acc.push_back(kb.var(fmt::format("acc{}", r), kb.constant(t, 0)));
      kb.if_((slice < slices) & (col < Dv), [&] {
        kb.for_(slice, kb.u32(L), kb.u32(slices), [&](Val j) {
          Val value = to_t(v[(b * L + j) * Dv + col].load());
          for (uint32_t r = 0; r < R; ++r) acc[r] += scores[r * L + j].load() * value;
        });
      });
      kb.if_(slice < slices, [&] {
        for (uint32_t r = 0; r < R; ++r) partial[(slice * R + r) * C + column] = acc[r].get();
      });
      kb.barrier();
      kb.if_((slice == 0u) & (col < Dv), [&] {
        for (uint32_t r = 0; r < R; ++r) {
          Var total = kb.var(fmt::format("total{}", r), partial[r * C + column].load());
          for (uint32_t sl = 1; sl < slices; ++sl) total += partial[(sl * R + r) * C + column].load();
          o[(b * R + r) * Dv + col] = total.get() * inverse_sum[r];
        }
      });
      kb.barrier();  // the partial sums are read before the next pass writes them
    }
  });
  return {kb.finish(), B};
}

}  // namespace spire::lowering::heavy
