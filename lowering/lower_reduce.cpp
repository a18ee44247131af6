// Reductions (sum, mean, max over any axes; sum_to) without atomics, so every run adds in the same order.
//
// The input splits into kept dims (one output element each) and reduced dims (R elements folded into
// each output); each side's element offset comes from an IndexMap. Two templates:
//   * loop: one invocation per output element walks its R elements (small R, or many outputs);
//   * workgroup: one workgroup per output element; each invocation strides over R, then a shared-memory
//     tree with barriers combines the partial results (large R).
// R == 1 (no axes, or only size-1 axes) moves no data: the result aliases the input.
#include <algorithm>

#include <fmt/format.h>

#include "lowering/kernel_templates.h"
#include "lowering/op_lowering.h"

namespace spire::lowering {

using kir::Type;
using kir::Val;

namespace {

constexpr uint32_t kReduceWorkgroup = 256;

enum class Combine { Sum, Max };

struct Reduction {
  Combine combine = Combine::Sum;
  bool mean = false;
  int64_t outputs = 0;   // O
  int64_t reduced = 0;   // R
  IndexMap kept;         // output index -> input offset of its first element
  IndexMap over;         // reduced index -> offset from there
};

Reduction describe(const graph::Graph& g, graph::Value v) {
  using K = graph::OpKind;
  const graph::Node& n = g.node(v);
  const graph::Shape& in = g.type(n.inputs[0]).shape;
  std::vector<bool> reduce_dim(in.size(), false);
  if (n.op == K::SumTo) {
    const auto& target = n.attrs.get_ints("shape");
    size_t lead = in.size() - target.size();
    for (size_t d = 0; d < in.size(); ++d)
      reduce_dim[d] = d < lead || (target[d - lead] == 1 && in[d] != 1);
  } else {
    for (int64_t a : n.attrs.get_ints("axes")) reduce_dim[size_t(a)] = true;
  }
  std::vector<int64_t> strides = row_major_strides(in);
  graph::Shape kept_sizes, red_sizes;
  std::vector<int64_t> kept_strides, red_strides;
  for (size_t d = 0; d < in.size(); ++d) {
    (reduce_dim[d] ? red_sizes : kept_sizes).push_back(in[d]);
    (reduce_dim[d] ? red_strides : kept_strides).push_back(strides[d]);
  }
  Reduction r;
  r.combine = n.op == K::Max ? Combine::Max : Combine::Sum;
  r.mean = n.op == K::Mean;
  r.outputs = graph::num_elements(kept_sizes);
  r.reduced = graph::num_elements(red_sizes);
  r.kept = IndexMap::strided(kept_sizes, kept_strides);
  r.over = IndexMap::strided(red_sizes, red_strides);
  return r;
}

Val combine(Combine c, Val a, Val b) { return c == Combine::Sum ? a + b : kir::max(a, b); }

Val finalize(const Reduction& r, Val acc) { return r.mean ? acc * (1.0 / double(r.reduced)) : acc; }

Val element(kir::KernelBuilder& kb, kir::Buf x, const Reduction& r, Val base, Val k) {
  return x[r.over.terms.empty() ? base : base + r.over.emit(kb, k)];
}

kir::Kernel loop_kernel(const std::string& name, Type t, const Reduction& r) {
  kir::KernelBuilder kb(name, kReduceWorkgroup);
  kir::Buf x = kb.buffer("x", t, kir::Access::Read);
  kir::Buf y = kb.buffer("y", t, kir::Access::Write);
  Val o = kb.global_id();
  kb.if_(o < kb.u32(uint32_t(r.outputs)), [&] {
    Val base = r.kept.emit(kb, o);
    // max starts from the first element (no -inf needed, and it works for integers); sum from zero.
    bool first = r.combine == Combine::Max;
    kir::Var acc = kb.var("acc", first ? Val(element(kb, x, r, base, kb.u32(0))) : kb.constant(t, 0));
    kb.for_(kb.u32(first ? 1 : 0), kb.u32(uint32_t(r.reduced)),
            [&](Val k) { acc = combine(r.combine, acc, element(kb, x, r, base, k)); });
    y[o] = finalize(r, acc);
  });
  return kb.finish();
}

kir::Kernel workgroup_kernel(const std::string& name, Type t, const Reduction& r) {
  const uint32_t wg = kReduceWorkgroup;
  kir::KernelBuilder kb(name, wg);
  kir::Buf x = kb.buffer("x", t, kir::Access::Read);
  kir::Buf y = kb.buffer("y", t, kir::Access::Write);
  kir::Shared tile = kb.shared("tile", t, wg);
  Val group = kb.group_id(), lid = kb.local_id();
  Val outputs = kb.u32(uint32_t(r.outputs)), reduced = kb.u32(uint32_t(r.reduced));
  // Groups past the last output (a folded grid launches a few) work on the last output but never store,
  // so every invocation reaches every barrier.
  Val base = r.kept.emit(kb, kir::min(group, outputs - 1u));
  // max: invocations past R start from element R-1 again (max is idempotent, the result is unchanged) and
  // continue one stride on; sum starts from zero.
  bool is_max = r.combine == Combine::Max;
  kir::Var acc = is_max ? kb.var("acc", element(kb, x, r, base, kir::min(lid, reduced - 1u)))
                        : kb.var("acc", kb.constant(t, 0));
  Val begin = is_max ? lid + wg : lid;
  kb.for_(begin, reduced, kb.u32(wg), [&](Val k) { acc = combine(r.combine, acc, element(kb, x, r, base, k)); });
  tile[lid] = acc.get();
  kb.barrier();
  for (uint32_t stride = wg / 2; stride > 0; stride /= 2) {
    kb.if_(lid < stride, [&] { tile[lid] = combine(r.combine, tile[lid], tile[lid + stride]); });
    kb.barrier();
  }
  kb.if_((lid == 0u) & (group < outputs), [&] { y[group] = finalize(r, tile[0u]); });
  return kb.finish();
}

// One workgroup per output pays off once an output folds enough elements to keep the workgroup busy, or when
// there are too few outputs to fill the device one invocation each.
bool use_workgroup(const Reduction& r) {
  return r.reduced >= 128 || (r.reduced >= 16 && r.outputs <= 1024);
}

}  // namespace

void lower_reduce(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  graph::Value x = n.inputs[0];
  Reduction r = describe(g, v);
  if (r.reduced == 1) {  // nothing is combined: same elements, same order
    ctx.alias(v, x);
    return;
  }
  if (r.outputs == 0) return;
  Type t = device_type(n.type.dtype);
  bool wg = r.reduced > 0 && use_workgroup(r);
  std::string name = fmt::format("{}_{}_{}_to_{}_{}", graph::op_name(n.op), graph::dtype_name(n.type.dtype),
                                 shape_tag(g.type(x).shape), shape_tag(n.type.shape), wg ? "wg" : "loop");
  if (wg)
    ctx.launch(workgroup_kernel(name, t, r), {ctx.buffer_of(x), ctx.buffer_of(v)}, {}, uint64_t(r.outputs));
  else
    ctx.launch(loop_kernel(name, t, r), {ctx.buffer_of(x), ctx.buffer_of(v)}, {},
               groups_for(r.outputs, kReduceWorkgroup));
}

}  // namespace spire::lowering
