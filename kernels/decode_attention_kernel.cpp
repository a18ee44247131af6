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

// Elements of K an invocation reads at once: 4 where a key's row starts on 4 elements of 32 or 16 bits (kir's vector
// loads), else 1.
uint32_t key_lanes(const DecodeAttentionShape& s, Type t) {
  return s.depth % 4 == 0 && (t != Type::F64 || s.k_half) ? 4 : 1;
}

bool pow2(uint32_t n) { return n != 0 && (n & (n - 1)) == 0; }

// Reads issued together before the arithmetic that waits on them: a key's row (up to this many reads, else a loop),
// and the values of this many keys in the weighted sum.
constexpr uint32_t kUnrolledReads = 32;
constexpr uint32_t kValueReads = 8;
// Rounds of keys (a key an invocation each) whose rows are all read at once; more take a loop, a round at a time.
constexpr uint32_t kUnrolledKeyRounds = 2;
// A slice's values read at once, before steps 1 and 2, where it takes at most this many keys; more take a loop of
// kValueReads keys an iteration after it.
constexpr uint32_t kPrefetchedValues = 16;

}  // namespace

std::string DecodeAttentionShape::text() const {
  std::string t = fmt::format("b{}_r{}_l{}_d{}_dv{}", batches, rows, keys, depth, value_depth);
  for (const auto& [name, half] : {std::pair{"q", q_half}, std::pair{"k", k_half}, std::pair{"v", v_half}})
    if (half) t += fmt::format("_{}{}", name, dtype_name(*half));
  if (key_group != 1) t += fmt::format("_kg{}", key_group);
  if (value_group != 1) t += fmt::format("_vg{}", value_group);
  return t;
}

uint64_t decode_attention_shared_bytes(const DecodeAttentionShape& s, Type t, uint32_t wg) {
  // The queries, the scores, and one partial sum per row and invocation (which the reductions use as their scratch);
  // the new key row where the launch writes it.
  return (uint64_t(s.rows) * (uint64_t(s.depth) + uint64_t(s.keys) + wg) + uint64_t(s.depth)) * type_bytes(t);
}

bool decode_attention_fits(const DecodeAttentionShape& s, Type t) {
  return s.rows >= 1 && s.rows <= kDecodeAttentionMostRows && s.batches >= 1 && s.keys >= 1 && s.depth >= 1 &&
         s.value_depth >= 1 && s.key_group >= 1 && s.batches % s.key_group == 0 && s.value_group >= 1 &&
         s.batches % s.value_group == 0 &&
         decode_attention_shared_bytes(s, t, kDecodeAttentionWorkgroup) <= kDecodeAttentionSharedBytes;
}

uint32_t choose_decode_attention_columns(const DecodeAttentionShape& s, uint32_t wg, bool cpu) {
  // All the values' columns (a power of two up to the workgroup).
  uint32_t all = 1;
  while (all < wg && all < s.value_depth) all *= 2;
  if (cpu) return all;
  // Halved while there are fewer than 96 workgroups (down to 4 columns).
  uint32_t columns = all;
  while (columns > 4 && uint64_t(s.batches) * ((uint64_t(s.value_depth) + columns - 1) / columns) < 96) columns /= 2;
  return columns;
}

HeavyKernel decode_attention_kernel(const DecodeAttentionShape& s, Type t, uint32_t wg, uint32_t columns,
                                    uint32_t subgroup, const AttentionScore& score, AttentionCacheWrites writes) {
  const std::string name = fmt::format("decode_attention_{}_{}_c{}{}{}", s.text(), float_suffix(t, "attention"), columns,
                                       wg == kDecodeAttentionWorkgroup ? "" : fmt::format("_wg{}", wg),
                                       writes.key || writes.value
                                           ? fmt::format("_writes_{}{}", writes.key ? "k" : "", writes.value ? "v" : "")
                                           : "");
  if (!decode_attention_fits(s, t))
    throw std::invalid_argument(fmt::format("{}: takes 1 to {} queries a batch whose scores fit {} bytes of workgroup "
                                            "memory", name, kDecodeAttentionMostRows, kDecodeAttentionSharedBytes));
  if (wg < 32 || wg > 1024 || !pow2(wg))
    throw std::invalid_argument(fmt::format("{}: a workgroup of {} invocations (a power of two, 32 to 1024)", name, wg));
  if (!pow2(columns) || columns > wg)
    throw std::invalid_argument(fmt::format("{}: {} value columns a workgroup (a power of two up to {})", name, columns, wg));
  for (int64_t extent : {s.batches * s.rows * s.keys, s.batches * s.keys * s.depth, s.batches * s.keys * s.value_depth,
                         s.batches * s.rows * s.depth, s.batches * s.rows * s.value_depth})
    index_u32(extent, "attention extents");
  const uint32_t B = uint32_t(s.batches), R = uint32_t(s.rows), L = uint32_t(s.keys), D = uint32_t(s.depth);
  const uint32_t Dv = uint32_t(s.value_depth), C = columns, slices = wg / C, blocks = (Dv + C - 1) / C;
  const uint32_t lanes = key_lanes(s, t);
  const Type k_type = s.k_half.value_or(t), v_type = s.v_half.value_or(t);
  const uint32_t Gk = uint32_t(s.key_group), Gv = uint32_t(s.value_group);

  KernelBuilder kb(name, wg);
  // The caches are read and written, but no invocation reads what another wrote: the new rows are read from their
  // own buffers.
  kb.barriers_order_workgroup_memory_only();
  Buf q = kb.buffer("q", s.q_half.value_or(t), Access::Read);
  Buf k = kb.buffer("k", k_type, writes.key ? Access::ReadWrite : Access::Read);
  Buf v = kb.buffer("v", v_type, writes.value ? Access::ReadWrite : Access::Read);
  Buf o = kb.buffer("o", t, Access::Write);
  // The rows written and their positions.
  std::optional<Buf> key_row, key_slot, value_row, value_slot;
  if (writes.key) {
    key_row = kb.buffer("key_row", k_type, Access::Read);
    key_slot = kb.buffer("key_slot", Type::I32, Access::Read);
  }
  if (writes.value) {
    value_row = kb.buffer("value_row", v_type, Access::Read);
    value_slot = kb.buffer("value_slot", Type::I32, Access::Read);
  }
  Shared queries = kb.shared("queries", t, R * D);
  // The new key row, read once from its buffer (element by element, so that lowering may compute it there instead: a
  // rotary embedding, lowering/fuse.h) and from here by the scores.
  std::optional<Shared> new_key_row;
  if (writes.key) new_key_row = kb.shared("new_key_row", t, D);
  Shared scores = kb.shared("scores", t, R * L);
  Shared partial = kb.shared("partial", t, R * wg);
  WorkgroupReduce reduce(kb, wg, reduce_subgroup_size(subgroup, wg, t));
  auto to_t = [&](Val x) { return x.type() == t ? x : cast(x, t); };
  kb.if_(kb.group_id() < B * blocks, [&] {  // uniform: a folded grid's extra workgroups skip everything
    Val b = kb.group_id() / blocks, block = kb.group_id() % blocks, lid = kb.local_id(), e = reduce.element();
    // The batches of k and v this one reads (one each per group of query heads), and whether it is its group's first,
    // which alone writes the group's new rows.
    Val kbatch = b / Gk, vbatch = b / Gv;
    Val key_writer = b % Gk == 0u, value_writer = b % Gv == 0u;
    // Where the new rows go (-1: nowhere). A workgroup writes the part of them it reads (the first block the key, each
    // block its value columns); everyone reads them from their buffers, so no write need land before another's read.
    auto slot_of = [&](const std::optional<Buf>& slot) {
      if (!slot) return kb.i32(-1);
      Val at = (*slot)[0u].load();
      return select((at >= 0) & (at < int32_t(L)), at, kb.i32(-1));
    };
    Val new_key = slot_of(key_slot), new_value = slot_of(value_slot);
    // Step 1's key rows, where an invocation takes at most kUnrolledKeyRounds keys: all read first, before the staging
    // below (a rotary embedding computed there, for one) and its barrier, so that their latency hides behind it, and a
    // second round of keys (GPT-2's 288 positions over 256 invocations) does not wait for the first round's arithmetic.
    // The reads' addresses wait for nothing: the new key's slot, which this launch writes (maybe in another workgroup
    // meanwhile), is read too, and its elements replaced by the staged row's in step 1, as step 3 does with the values.
    auto cached = [&](Val j, Val d) {  // key j's elements d .. d + lanes - 1 in the cache
      Val at = (kbatch * L + j) * D + d;
      if (lanes == 1) return std::vector<Val>{k[at].load()};
      return s.k_half ? k.load_vector_widened(at, lanes) : k.load_vector(at, lanes);
    };
    const uint32_t rounds = (L + wg - 1) / wg;
    const bool unrolled_keys = D / lanes <= kUnrolledReads && rounds <= kUnrolledKeyRounds;
    std::vector<Val> keys;                            // [round]: the key read (the last one past the end)
    std::vector<std::vector<std::vector<Val>>> rows;  // [round][read][lane]
    if (unrolled_keys)
      for (uint32_t u = 0; u < rounds; ++u) {
        Val j = min(lid + u * wg, L - 1);
        keys.push_back(j);
        std::vector<std::vector<Val>> row;
        for (uint32_t d = 0; d < D; d += lanes) row.push_back(cached(j, kb.u32(d)));
        rows.push_back(std::move(row));
      }
    // This invocation's value column and slice of keys for step 3; where a slice takes at most kPrefetchedValues keys,
    // their values are read now, their latency hidden behind steps 1 and 2 (a key past the end reads the
    // last one's and adds nothing; the slot this launch writes is read too, and replaced by the new row in step 3).
    Val slice = lid / C, column = lid % C, col = block * C + column;
    const uint32_t per_slice = (L + slices - 1) / slices;
    const bool prefetch = per_slice <= kPrefetchedValues;
    std::vector<Val> prefetched;  // [u]: the value of key slice + u * slices
    if (prefetch)
      for (uint32_t u = 0; u < per_slice; ++u)
        prefetched.push_back(to_t(v[(vbatch * L + min(slice + u * slices, L - 1)) * Dv + min(col, Dv - 1)].load()));
    if (writes.key) {
      Val writer = (block == 0u) & key_writer & (new_key >= 0);
      Val base = (kbatch * L + cast(max(new_key, kb.i32(0)), Type::U32)) * D;
      kb.for_(lid, kb.u32(D), kb.u32(wg), [&](Val d) {
        Val element = (*key_row)[kbatch * D + d].load();
        (*new_key_row)[d] = to_t(element);
        kb.if_(writer, [&] { k[base + d] = element; });
      });
    }
    kb.for_(lid, kb.u32(R * D), kb.u32(wg), [&](Val i) { queries[i] = to_t(q[b * (R * D) + i].load()); });
    kb.barrier();

    // 1. Scores: this invocation's keys, every row's dot product with each.
    auto fresh_key = [&](Val d) {  // the new key's elements d .. d + lanes - 1, staged above
      std::vector<Val> key;
      for (uint32_t l = 0; l < lanes; ++l) key.push_back((*new_key_row)[d + l].load());
      return key;
    };
    // Every row's score against key j from its elements ([read][lane]: elements read * lanes + lane).
    auto score_key = [&](Val j, const std::vector<std::vector<Val>>& key) {
      for (uint32_t r = 0; r < R; ++r) {
        Val dot = kb.constant(t, 0);
        for (uint32_t d = 0; d < D; d += lanes)
          for (uint32_t l = 0; l < lanes; ++l) dot = dot + queries[r * D + d + l].load() * to_t(key[d / lanes][l]);
        scores[r * L + j] = score ? score(kb, (b * R + r) * L + j, dot) : dot;
      }
    };
    if (unrolled_keys) {
      for (uint32_t u = 0; u < rounds; ++u) {
        if (writes.key) {
          Val is_new = cast(keys[u], Type::I32) == new_key;
          for (uint32_t d = 0; d < D; d += lanes) {
            const std::vector<Val> staged = fresh_key(kb.u32(d));
            for (uint32_t l = 0; l < lanes; ++l)
              rows[u][d / lanes][l] = select(is_new, staged[l], to_t(rows[u][d / lanes][l]));
          }
        }
        kb.if_(lid + u * wg < L, [&] { score_key(keys[u], rows[u]); });
      }
    } else {
      kb.for_(lid, kb.u32(L), kb.u32(wg), [&](Val j) {
        std::vector<Var> dot;
        for (uint32_t r = 0; r < R; ++r) dot.push_back(kb.var(fmt::format("dot{}", r), kb.constant(t, 0)));
        // The key's row in reads of `lanes`, all issued before the multiply-adds that wait on them (unrolled here: a
        // loop would wait for each read in turn) where they are at most kUnrolledReads, else a loop.
        // `read(d)`: the key's elements d .. d + lanes - 1.
        auto dots_from = [&](const std::function<std::vector<Val>(Val)>& read) {
          auto accumulate = [&](Val d, const std::vector<Val>& key) {
            for (uint32_t l = 0; l < lanes; ++l)
              for (uint32_t r = 0; r < R; ++r) dot[r] += queries[r * D + d + l].load() * to_t(key[l]);
          };
          if (D / lanes <= kUnrolledReads) {
            std::vector<std::vector<Val>> key;
            for (uint32_t d = 0; d < D; d += lanes) key.push_back(read(kb.u32(d)));
            for (uint32_t d = 0; d < D; d += lanes) accumulate(kb.u32(d), key[d / lanes]);
          } else {
            kb.for_(kb.u32(0), kb.u32(D), kb.u32(lanes), [&](Val d) { accumulate(d, read(d)); });
          }
        };
        auto from_cache = [&](Val d) { return cached(j, d); };
        if (writes.key)
          kb.if_else(cast(j, Type::I32) == new_key, [&] { dots_from(fresh_key); }, [&] { dots_from(from_cache); });
        else
          dots_from(from_cache);
        for (uint32_t r = 0; r < R; ++r) {
          Val at = (b * R + r) * L + j;
          scores[r * L + j] = score ? score(kb, at, dot[r].get()) : dot[r].get();
        }
      });
    }
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

    // 3. The block's weighted values: C neighbouring columns a slice, the slices' sums added in slice order.
    if (writes.value)
      kb.if_((slice == 0u) & (col < Dv) & value_writer & (new_value >= 0), [&] {
        v[(vbatch * L + cast(new_value, Type::U32)) * Dv + col] = (*value_row)[vbatch * Dv + col].load();
      });
    std::vector<Var> acc;
    for (uint32_t r = 0; r < R; ++r) acc.push_back(kb.var(fmt::format("acc{}", r), kb.constant(t, 0)));
    kb.if_(col < Dv, [&] {
      Val fresh = writes.value ? to_t((*value_row)[vbatch * Dv + col].load()) : Val();
      // Keys first, first + slices, ... with their values (a key past the end adds nothing).
      auto add = [&](Val first, const std::vector<Val>& values) {
        for (uint32_t u = 0; u < values.size(); ++u) {
          Val key = min(first + u * slices, L - 1), value = values[u];
          if (writes.value) value = select(cast(key, Type::I32) == new_value, fresh, value);
          Val inside = first + u * slices < L;
          for (uint32_t r = 0; r < R; ++r)
            acc[r] += select(inside, scores[r * L + key].load() * value, kb.constant(t, 0));
        }
      };
      if (prefetch) {
        add(slice, prefetched);
      } else {
        // kValueReads keys an iteration, their values read before the multiply-adds wait on them.
        kb.for_(slice, kb.u32(L), kb.u32(slices * kValueReads), [&](Val first) {
          std::vector<Val> values;
          for (uint32_t u = 0; u < kValueReads; ++u)
            values.push_back(to_t(v[(vbatch * L + min(first + u * slices, L - 1)) * Dv + col].load()));
          add(first, values);
        });
      }
    });
    for (uint32_t r = 0; r < R; ++r) partial[(slice * R + r) * C + column] = acc[r].get();
    kb.barrier();
    kb.if_((slice == 0u) & (col < Dv), [&] {
      for (uint32_t r = 0; r < R; ++r) {
        Var total = kb.var(fmt::format("total{}", r), partial[r * C + column].load());
        for (uint32_t sl = 1; sl < slices; ++sl) total += partial[(sl * R + r) * C + column].load();
        o[(b * R + r) * Dv + col] = total.get() * inverse_sum[r];
      }
    });
  });
  return {kb.finish(), uint64_t(B) * blocks};
}

}  // namespace spire::lowering::heavy
