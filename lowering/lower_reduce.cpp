// Reductions (sum, mean, max over any axes; sum_to) without atomics, so every run adds in the same order.
//
// The input splits into kept dims (one output element each) and reduced dims (R elements folded into
// each output); each side's element offset comes from an IndexMap. Two templates:
//   * loop: one invocation per output element walks its R elements (small R, or many outputs);
//   * workgroup: one workgroup per output element; each invocation strides over R, then a shared-memory
//     tree with barriers combines the partial results (large R);
//   * split: few outputs over a very long R (a loss over a whole batch): R is cut into chunks, one workgroup
//     per (output, chunk) writes partial results to scratch, and a second launch reduces those.
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

// One workgroup per (output, chunk): with chunks == 1 a workgroup folds a whole output's R elements and stores
// the result; with chunks > 1 each folds R / chunks of them into partials[output * chunks + chunk], which a
// second launch combines (lower_reduce), so an output over millions of elements still spreads over the device.
kir::Kernel workgroup_kernel(const std::string& name, Type t, const Reduction& r, int64_t chunks = 1) {
  const uint32_t wg = kReduceWorkgroup;
  const int64_t chunk_len = (r.reduced + chunks - 1) / chunks;
  kir::KernelBuilder kb(name, wg);
  kir::Buf x = kb.buffer("x", t, kir::Access::Read);
  kir::Buf y = kb.buffer(chunks == 1 ? "y" : "partials", t, kir::Access::Write);
  kir::Shared tile = kb.shared("tile", t, wg);
  Val group = kb.group_id(), lid = kb.local_id();
  Val groups = kb.u32(uint32_t(r.outputs * chunks));
  // Groups past the last one (a folded grid launches a few) redo the last group's work but never store, so
  // every invocation reaches every barrier.
  Val g = kir::min(group, groups - 1u);
  Val out = chunks == 1 ? g : g / kb.u32(uint32_t(chunks));
  Val begin = chunks == 1 ? kb.u32(0) : (g % kb.u32(uint32_t(chunks))) * kb.u32(uint32_t(chunk_len));
  Val end = chunks == 1 ? kb.u32(uint32_t(r.reduced)) : kir::min(begin + uint32_t(chunk_len), kb.u32(uint32_t(r.reduced)));
  Val base = r.kept.emit(kb, out);
  // max: invocations past the range start from its last element (max is idempotent, the result is unchanged)
  // and continue one stride on; sum starts from zero.
  bool is_max = r.combine == Combine::Max;
  kir::Var acc = is_max ? kb.var("acc", element(kb, x, r, base, kir::min(begin + lid, end - 1u)))
                        : kb.var("acc", kb.constant(t, 0));
  Val first = is_max ? begin + lid + wg : begin + lid;
  kb.for_(first, end, kb.u32(wg), [&](Val k) { acc = combine(r.combine, acc, element(kb, x, r, base, k)); });
  tile[lid] = acc.get();
  kb.barrier();
  for (uint32_t stride = wg / 2; stride > 0; stride /= 2) {
    kb.if_(lid < stride, [&] { tile[lid] = combine(r.combine, tile[lid], tile[lid + stride]); });
    kb.barrier();
  }
  kb.if_((lid == 0u) & (group < groups), [&] {
    Val v = tile[0u];
    y[group] = chunks == 1 ? finalize(r, v) : v;
  });
  return kb.finish();
}

// One workgroup per output pays off once an output folds enough elements to keep the workgroup busy, or when
// there are too few outputs to fill the device one invocation each.
bool use_workgroup(const Reduction& r) {
  return r.reduced >= 128 || (r.reduced >= 16 && r.outputs <= 1024);
}

// Few outputs over a very long extent would leave most of a GPU idle (one workgroup per output): split each
// output's extent into chunks of about 4096 elements (16 per invocation), at most 1024 chunks.
int64_t split_chunks(const Reduction& r) {
  constexpr int64_t kChunk = 4096, kMaxChunks = 1024, kFewOutputs = 1024;
  if (r.outputs >= kFewOutputs || r.reduced < 4 * kChunk) return 1;
  return std::min(kMaxChunks, (r.reduced + kChunk - 1) / kChunk);
}

void launch_reduction(LoweringContext& ctx, const std::string& stem, Type t, const Reduction& r, int32_t in, int32_t out) {
  if (r.reduced > 0 && use_workgroup(r))
    ctx.launch(workgroup_kernel(stem + "_wg", t, r), {in, out}, {}, uint64_t(r.outputs));
  else
    ctx.launch(loop_kernel(stem + "_loop", t, r), {in, out}, {}, groups_for(r.outputs, kReduceWorkgroup));
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
  std::string stem = fmt::format("{}_{}_{}_to_{}", graph::op_name(n.op), graph::dtype_name(n.type.dtype),
                                 shape_tag(g.type(x).shape), shape_tag(n.type.shape));
  int64_t chunks = split_chunks(r);
  if (chunks > 1) {
    // Pass 1: partial results [outputs, chunks] in scratch; pass 2 reduces them like any other reduction.
    int32_t partials = ctx.scratch(t, r.outputs * chunks);
    ctx.launch(workgroup_kernel(stem + fmt::format("_split{}", chunks), t, r, chunks), {ctx.buffer_of(x), partials}, {},
               uint64_t(r.outputs * chunks));
    Reduction second = r;
    second.reduced = chunks;
    second.kept = IndexMap::strided({r.outputs}, {chunks});
    second.over = IndexMap::strided({chunks}, {1});
    launch_reduction(ctx, stem + "_combine", t, second, partials, ctx.buffer_of(v));
    return;
  }
  launch_reduction(ctx, stem, t, r, ctx.buffer_of(x), ctx.buffer_of(v));
}

}  // namespace spire::lowering
