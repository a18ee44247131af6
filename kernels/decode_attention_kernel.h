// Attention at a few queries in one launch (a decoder's step: one query a head):
// o[b, r, :] = sum_j p[b, r, j] v[b, j, :], where p[b, r, j] = exp(s_j - max) / sum_j' exp(s_j' - max)
// of the scores s_j = score(q[b, r, :] . k[b, j, :]).
// `score` is what the graph does to the dot products before its weights (a scale, a mask), given to the kernel as a
// function of the element: the lowering computes the graph's pointwise tree there (lowering/fuse.h's absorbed
// attention). Run as three launches (the scores' product, the weights, the values' product), a GPT-2 layer's attention
// cost three launch floors, which at batch 1 are most of its time.
//
// A workgroup computes one batch's (batch x heads) attention for a block of `columns` value columns: a decode step has
// few heads (GPT-2's 12), so one workgroup a head would leave most of a GPU idle and each invocation a long chain of
// reads. Every workgroup of a batch computes all its scores (K read again from cache by each), in three phases, each
// reading what the one before left in workgroup memory:
//   1. the queries (and the new key row, where the launch writes it) staged, each element read once, one at a time
//      (so that lowering may compute them there: a rotary embedding, lowering/fuse.h); each invocation takes keys
//      j = lid, lid + wg, ... and computes all rows' scores for its key (its row of K read once, four elements a read
//      where the depth allows, f16/bf16 widened as read; up to two keys an invocation, their rows read at the start,
//      before the staging, so that their latency hides behind it and a second round does not wait for the first);
//   2. each row's maximum and sum of exponentials by WorkgroupReduce (one fixed order on every device), the
//      exponentials kept in place of the scores;
//   3. the weighted sum of the block's values: invocations split into wg / columns slices of neighbouring columns
//      (coalesced reads of a row of V), slice s taking keys s, s + slices, ...; the slices' partial sums added in slice
//      order and divided by the row's sum. Where a slice takes at most 16 keys, its values are read at the start,
//      before step 1, their latency hidden behind the scores and the weights.
// Workgroup memory holds the queries, the new key row, the scores and one partial sum per row and invocation; a shape whose scores do
// not fit kDecodeAttentionSharedBytes (every Vulkan device has 16 KiB) is not taken (the three launches run instead).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "kernels/heavy_kernel.h"

namespace spire::lowering::heavy {

struct DecodeAttentionShape {
  int64_t batches = 1;      // products: batch x heads (q, k and v have the same batch dims)
  int64_t rows = 1;         // queries a batch (R)
  int64_t keys = 1;         // positions (L)
  int64_t depth = 1;        // of a query and a key (D)
  int64_t value_depth = 1;  // of a value (Dv)
  // Operands stored in f16 or bf16 (a half policy's activations and cache), widened to the sums' type as read.
  std::optional<kir::Type> q_half, k_half, v_half;
  // Grouped-query attention: `key_group` consecutive batches (query heads) share one batch of k, and `value_group`
  // one of v, which then hold batches / group batches (Llama's 32 query heads over 8 key-value heads: 4), read in place
  // of a copy broadcast to every head.
  int64_t key_group = 1, value_group = 1;
  // "b12_r1_l256_d64_dv64" (+ "_kbf16" ... for half operands, "_kg4" ... for groups): what kernel names carry.
  std::string text() const;
};

inline constexpr int64_t kDecodeAttentionMostRows = 4;
inline constexpr uint64_t kDecodeAttentionSharedBytes = 16 * 1024;
inline constexpr uint32_t kDecodeAttentionWorkgroup = 256;

// Workgroup memory the kernel takes with sums of type `t` and `wg` invocations.
uint64_t decode_attention_shared_bytes(const DecodeAttentionShape& s, kir::Type t, uint32_t wg);
// Whether the kernel takes the shape: at most kDecodeAttentionMostRows queries, nonempty, and workgroup memory within
// kDecodeAttentionSharedBytes at kDecodeAttentionWorkgroup invocations.
bool decode_attention_fits(const DecodeAttentionShape& s, kir::Type t);

// The score of query row r against key j before the weights, from their dot product `dot` (in the sums' type) and the
// element index (b * R + r) * L + j of the scores [batches, R, L]; it must return the sums' type.
using AttentionScore = std::function<kir::Val(kir::KernelBuilder& kb, kir::Val index, kir::Val dot)>;

// New rows [batches, 1, depth] (key) and [batches, 1, value_depth] (value), of k's and v's stored types, written at
// position `slot` (element 0 of an i32 buffer) of k and v, and read in place of the caches' rows there: buffers
// `key_row`, `key_slot` where `key`, then `value_row`, `value_slot` where `value`; k and v are then written too. A slot
// outside [0, keys) writes nothing (write_at's rule) and matches no key.
struct AttentionCacheWrites {
  bool key = false, value = false;
};

// The value columns a workgroup computes: all of them (a power of two up to the workgroup), halved on a GPU while that
// gives fewer than 96 workgroups, down to 4 (GPT-2's 12 heads of 64: 8 columns, 96 workgroups; Llama 1B's 32: 16); on
// a CPU device, where every workgroup's scores cost real time, all of them.
uint32_t choose_decode_attention_columns(const DecodeAttentionShape& s, uint32_t wg, bool cpu);

// `t`: F32 or F64 sums. `wg`: a power of two from 32 to 1024. `columns`: a power of two up to wg (the workgroups are
// batches x ceil(value_depth / columns)). `subgroup`: the device's Limits::subgroup_size for the reductions (the same
// bits either way). No `score`: the dot products as they are. Throws std::invalid_argument for a shape the kernel does
// not take, a bad workgroup or column count.
HeavyKernel decode_attention_kernel(const DecodeAttentionShape& s, kir::Type t, uint32_t wg, uint32_t columns,
                                    uint32_t subgroup, const AttentionScore& score = {},
                                    AttentionCacheWrites writes = {});

}  // namespace spire::lowering::heavy
