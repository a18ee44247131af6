#include "kernels/argmax_kernel.h"

#include <functional>
#include <limits>
#include <optional>
#include <utility>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/workgroup_reduce.h"

namespace spire::lowering::heavy {

namespace {
constexpr uint32_t kArgmaxReads = 8;
}  // namespace

using kir::Access;
using kir::Buf;
using kir::KernelBuilder;
using kir::Shared;
using kir::Type;
using kir::Val;

uint32_t argmax_workgroup(const ArgmaxShape& s, uint32_t max_invocations) {
  uint32_t wg = 32;
  while (wg < kArgmaxWorkgroup && wg * 2 <= max_invocations && int64_t(wg) < s.axis) wg *= 2;
  return wg;
}

namespace {

// A workgroup's choice among `count` candidates: candidate k's value and position (positions rising with k, -1 for
// none), given by `candidate` for k < count. Each invocation keeps the best candidate it saw (the first of equals, or
// the last with select_last_index), kArgmaxReads of its next ones read an iteration before the comparisons that wait
// on them (a loop of one read an iteration waits for each in turn: Llama's 128256 logits took 20 us on an H200 so);
// then three workgroup reductions in a fixed order: whether any invocation saw a NaN (a NaN counts as the largest
// value, as torch.argmax has it), the largest value that is not NaN, and the smallest (or largest) position whose value
// is that one. Returns the chosen position (-1 where there was no candidate), every invocation holding it.
Val choose(KernelBuilder& kb, Type t, bool select_last_index, uint32_t wg, uint32_t subgroup, uint32_t count,
           const std::function<std::pair<Val, Val>(Val)>& candidate) {
  Shared values = kb.shared("values", t, wg), flags = kb.shared("flags", Type::I32, wg);
  WorkgroupReduce reduce(kb, wg, reduce_subgroup_size(subgroup, wg, t));
  // (f64 values reduce by the tree, the integers by subgroups where the device has them: the two orders differ, which
  // a maximum, exact in any order, does not see.)
  WorkgroupReduce reduce_i32(kb, wg, reduce_subgroup_size(subgroup, wg, Type::I32));
  auto is_nan = [](Val v) { return v != v; };
  kir::Var best = kb.var("best", kb.constant(t, 0)), at = kb.var("at", kb.i32(-1));
  kb.for_(reduce.element(), kb.u32(count), kb.u32(wg * kArgmaxReads), [&](Val first_k) {
    std::vector<Val> ks, vs, positions;
    for (uint32_t j = 0; j < kArgmaxReads; ++j) {
      ks.push_back(first_k + j * wg);
      auto [v, position] = candidate(min(ks.back(), count - 1));  // (past the end: read, never taken)
      vs.push_back(v.type() != t ? kir::cast(v, t) : v);
      positions.push_back(position);
    }
    for (uint32_t j = 0; j < kArgmaxReads; ++j) {
      Val v = vs[j], b = best.get();
      Val first = at.get() < 0;
      Val better = select_last_index ? (first | (v >= b) | is_nan(v)) : (first | (v > b) | (is_nan(v) & !is_nan(b)));
      better = better & (ks[j] < count) & (positions[j] >= 0);
      best = kir::select(better, v, b);
      at = kir::select(better, positions[j], at.get());
    }
  });
  Val seen = at.get() >= 0, b = best.get();
  reduce_i32.reduce(flags, kir::select(seen & is_nan(b), kb.i32(1), kb.i32(0)), TreeOp::Max);
  Val any_nan = flags[0u].load() > 0;
  kb.barrier();  // every invocation has read the flag before the positions' reduction writes the scratch again
  reduce.reduce(values, kir::select(seen & !is_nan(b), b, kb.constant(t, -std::numeric_limits<double>::infinity())),
                TreeOp::Max);
  Val largest = values[0u].load();
  Val chosen_one = seen & kir::select(any_nan, is_nan(b), b == largest);
  // The first position: the largest of the negated ones; the last: the largest.
  Val key = select_last_index ? at.get() : kb.i32(0) - at.get();
  reduce_i32.reduce(flags, kir::select(chosen_one, key, kb.i32(std::numeric_limits<int32_t>::min())), TreeOp::Max);
  Val chosen = flags[0u].load();
  // (No candidate: the reduction's minimum, negated or not; -1 then.)
  return kir::select(chosen == std::numeric_limits<int32_t>::min(), kb.i32(-1),
                     select_last_index ? chosen : kb.i32(0) - chosen);
}

void check(const std::string& name, Type t, uint32_t wg) {
  if (wg < 32 || wg > 1024 || (wg & (wg - 1)) != 0)
    throw std::invalid_argument(fmt::format("{}: a workgroup of {} invocations (a power of two, 32 to 1024)", name, wg));
  if (t != Type::F32 && t != Type::F64) throw std::invalid_argument(name + ": compares in f32 or f64");
}

std::string shape_text(const ArgmaxShape& s, Type x_type, bool select_last_index, uint32_t wg) {
  return fmt::format("o{}_l{}_i{}_{}{}{}", s.outer, s.axis, s.inner, dtype_name(x_type), select_last_index ? "_last" : "",
                     wg == kArgmaxWorkgroup ? "" : fmt::format("_wg{}", wg));
}

}  // namespace

uint32_t argmax_parts(const ArgmaxShape& s, bool cpu) {
  if (cpu || s.axis < 2 * int64_t(kArgmaxPartLength)) return 1;
  return uint32_t((s.axis + kArgmaxPartLength - 1) / kArgmaxPartLength);
}

HeavyKernel argmax_kernel(const ArgmaxShape& s, Type x_type, Type t, bool select_last_index, uint32_t wg,
                          uint32_t subgroup, uint32_t parts) {
  const std::string name = fmt::format("argmax{}_{}", parts > 1 ? fmt::format("_parts{}", parts) : "",
                                       shape_text(s, x_type, select_last_index, wg));
  check(name, t, wg);
  if (parts < 1 || int64_t(parts) > s.axis) throw std::invalid_argument(fmt::format("{}: {} parts", name, parts));
  const uint32_t rows = index_u32(s.outer * s.inner, "argmax rows"), L = index_u32(s.axis, "argmax axis");
  const uint32_t inner = index_u32(s.inner, "argmax inner");
  index_u32(s.outer * s.axis * s.inner, "argmax elements");
  // Positions a part: its last one may be shorter, none is empty.
  const uint32_t length = (L + parts - 1) / parts;
  if (uint64_t(length) * (parts - 1) >= L)
    throw std::invalid_argument(fmt::format("{}: {} parts of {} leave the last one empty", name, parts, length));
  index_u32(int64_t(rows) * parts, "argmax parts");
  KernelBuilder kb(name, wg);
  Buf x = kb.buffer("x", x_type, Access::Read);
  std::optional<Buf> y, part_values, part_positions;
  if (parts == 1) {
    y = kb.buffer("y", Type::I32, Access::Write);
  } else {
    part_values = kb.buffer("part_values", x_type, Access::Write);
    part_positions = kb.buffer("part_positions", Type::I32, Access::Write);
  }
  kb.if_(kb.group_id() < rows * parts, [&] {  // uniform: a folded grid's extra workgroups skip everything
    Val row = kb.group_id() / parts, part = kb.group_id() % parts;
    Val base = (row / inner) * (L * inner) + row % inner;
    Val first = part * length, count = min(first + length, kb.u32(L)) - first;
    Val chosen = choose(kb, t, select_last_index, wg, subgroup, length, [&](Val k) {
      Val position = first + k;
      Val inside = k < count;
      return std::pair{x[base + min(position, L - 1) * inner].load(),
                       kir::select(inside, kir::cast(position, Type::I32), kb.i32(-1))};
    });
    kb.if_(kb.local_id() == 0u, [&] {
      if (parts == 1) {
        (*y)[row] = chosen;
      } else {
        // The part's choice and its value as stored (a NaN stays a NaN), for argmax_of_parts_kernel.
        (*part_positions)[kb.group_id()] = chosen;
        (*part_values)[kb.group_id()] = x[base + kir::cast(kir::max(chosen, kb.i32(0)), Type::U32) * inner].load();
      }
    });
  });
  return {kb.finish(), uint64_t(rows) * parts};
}

HeavyKernel argmax_of_parts_kernel(const ArgmaxShape& s, Type x_type, Type t, bool select_last_index, uint32_t wg,
                                   uint32_t subgroup, uint32_t parts) {
  const std::string name = fmt::format("argmax_of_parts{}_{}", parts, shape_text(s, x_type, select_last_index, wg));
  check(name, t, wg);
  const uint32_t rows = index_u32(s.outer * s.inner, "argmax rows");
  KernelBuilder kb(name, wg);
  Buf part_values = kb.buffer("part_values", x_type, Access::Read);
  Buf part_positions = kb.buffer("part_positions", Type::I32, Access::Read);
  Buf y = kb.buffer("y", Type::I32, Access::Write);
  kb.if_(kb.group_id() < rows, [&] {
    Val row = kb.group_id();
    // The parts in order: their positions rise with them, so the first (or last) of equal values is chosen as over
    // the whole row.
    Val chosen = choose(kb, t, select_last_index, wg, subgroup, parts, [&](Val k) {
      return std::pair{part_values[row * parts + k].load(), part_positions[row * parts + k].load()};
    });
    kb.if_(kb.local_id() == 0u, [&] { y[row] = chosen; });
  });
  return {kb.finish(), rows};
}

}  // namespace spire::lowering::heavy
