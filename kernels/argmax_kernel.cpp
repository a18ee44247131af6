#include "kernels/argmax_kernel.h"

#include <limits>
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

HeavyKernel argmax_kernel(const ArgmaxShape& s, Type x_type, Type t, bool select_last_index, uint32_t wg,
                          uint32_t subgroup) {
  const std::string name = fmt::format("argmax_o{}_l{}_i{}_{}{}{}", s.outer, s.axis, s.inner, dtype_name(x_type),
                                       select_last_index ? "_last" : "", wg == kArgmaxWorkgroup ? "" : fmt::format("_wg{}", wg));
  if (wg < 32 || wg > 1024 || (wg & (wg - 1)) != 0)
    throw std::invalid_argument(fmt::format("{}: a workgroup of {} invocations (a power of two, 32 to 1024)", name, wg));
  if (t != Type::F32 && t != Type::F64) throw std::invalid_argument(name + ": compares in f32 or f64");
  const uint32_t rows = index_u32(s.outer * s.inner, "argmax rows"), L = index_u32(s.axis, "argmax axis");
  const uint32_t inner = index_u32(s.inner, "argmax inner");
  index_u32(s.outer * s.axis * s.inner, "argmax elements");
  KernelBuilder kb(name, wg);
  Buf x = kb.buffer("x", x_type, Access::Read);
  Buf y = kb.buffer("y", Type::I32, Access::Write);
  Shared values = kb.shared("values", t, wg), flags = kb.shared("flags", Type::I32, wg);
  WorkgroupReduce reduce(kb, wg, reduce_subgroup_size(subgroup, wg, t));
  // (f64 values reduce by the tree, the integers by subgroups where the device has them: the two orders differ, which
  // a maximum, exact in any order, does not see.)
  WorkgroupReduce reduce_i32(kb, wg, reduce_subgroup_size(subgroup, wg, Type::I32));
  kb.if_(kb.group_id() < rows, [&] {  // uniform: a folded grid's extra workgroups skip everything
    Val row = kb.group_id(), e = reduce.element();
    Val base = (row / inner) * (L * inner) + row % inner;
    auto is_nan = [](Val v) { return v != v; };
    kir::Var best = kb.var("best", kb.constant(t, 0)), at = kb.var("at", kb.i32(-1));
    // kArgmaxReads elements an iteration (this invocation's next ones, in order), all read before the comparisons that
    // wait on them: a loop of one read an iteration waits for each in turn (Llama's 128256 logits took 20 us on an
    // H200 so, 125 reads an invocation).
    kb.for_(e, kb.u32(L), kb.u32(wg * kArgmaxReads), [&](Val first_k) {
      std::vector<Val> ks, vs;
      for (uint32_t j = 0; j < kArgmaxReads; ++j) {
        ks.push_back(first_k + j * wg);
        Val v = x[base + min(ks.back(), L - 1) * inner].load();  // (a position past the end is read, never taken)
        vs.push_back(v.type() != t ? kir::cast(v, t) : v);
      }
      for (uint32_t j = 0; j < kArgmaxReads; ++j) {
        Val v = vs[j], b = best.get();
        Val first = at.get() < 0;
        Val better = select_last_index ? (first | (v >= b) | is_nan(v)) : (first | (v > b) | (is_nan(v) & !is_nan(b)));
        better = better & (ks[j] < L);
        best = kir::select(better, v, b);
        at = kir::select(better, kir::cast(ks[j], Type::I32), at.get());
      }
    });
    Val seen = at.get() >= 0, b = best.get();
    reduce_i32.reduce(flags, kir::select(seen & is_nan(b), kb.i32(1), kb.i32(0)), TreeOp::Max);
    Val any_nan = flags[0u].load() > 0;
    kb.barrier();  // every invocation has read the flag before the positions' reduction writes the scratch again
    reduce.reduce(values, kir::select(seen & !is_nan(b), b, kb.constant(t, -std::numeric_limits<double>::infinity())),
                  TreeOp::Max);
    Val largest = values[0u].load();
    Val candidate = seen & kir::select(any_nan, is_nan(b), b == largest);
    // The first position: the largest of the negated ones; the last: the largest.
    Val key = select_last_index ? at.get() : kb.i32(0) - at.get();
    reduce_i32.reduce(flags, kir::select(candidate, key, kb.i32(std::numeric_limits<int32_t>::min())), TreeOp::Max);
    Val chosen = flags[0u].load();
    kb.if_(kb.local_id() == 0u, [&] { y[row] = select_last_index ? chosen : kb.i32(0) - chosen; });
  });
  return {kb.finish(), rows};
}

}  // namespace spire::lowering::heavy
