// Pointwise ops: one invocation per output element, numpy broadcasting through per-input index maps,
// arithmetic in the value's device type (f32, f64, or i32 for integers; bool is u32 0/1). A node's kernel
// also computes every input fused into it (fuse.h), recursively, so a chain of pointwise ops is one launch.
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "ir/graph/op_table.h"
#include "lowering/fuse.h"
#include "lowering/kernel_templates.h"
#include "lowering/op_lowering.h"
#include "lowering/pointwise_tree.h"

namespace spire::lowering {

using kir::Type;
using kir::Val;

kir::Kernel copy_kernel(Type type, int64_t n) {
  return gather_kernel(fmt::format("copy_{}_{}", dtype_name(type), n), type, n, IndexMap::strided({n}, {1}));
}

kir::Kernel gather_kernel(const std::string& name, Type type, int64_t n, const IndexMap& map) {
  kir::KernelBuilder kb(name, kPointwiseWorkgroup);
  kir::Buf x = kb.buffer("x", type, kir::Access::Read);
  kir::Buf y = kb.buffer("y", type, kir::Access::Write);
  Val i = kb.global_id();
  kb.if_(i < kb.u32(uint32_t(n)), [&] { y[i] = x[map.is_identity() ? i : map.emit(kb, i)]; });
  return kb.finish();
}

void lower_elementwise(LoweringContext& ctx, graph::Value v) {
  using K = graph::OpKind;
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  int64_t count = n.type.numel();
  if (count > int64_t(std::numeric_limits<uint32_t>::max()))
    throw graph::GraphError(fmt::format("{} '{}': {} elements exceed the 2^32 a kernel indexes", graph::op_name(n.op),
                                        n.name, count));
  if (n.op == K::Cast && device_type(n.type.dtype) == device_type(g.type(n.inputs[0]).dtype) &&
      !ctx.fused(n.inputs[0])) {
    ctx.alias(v, n.inputs[0]);  // i32 <-> i64 (both stored as i32), or a cast to the same dtype
    return;
  }
  Type out_dt = device_type(n.type.dtype);
  // The kernel's name lists the ops it computes (root first) and the shapes it reads; its text is the key
  // that deduplicates it, so the name only has to be readable.
  kir::KernelBuilder kb("pointwise", kPointwiseWorkgroup);
  kir::Buf out = kb.buffer("out", out_dt, kir::Access::Write);
  PointwiseTree tree(ctx, kb);
  Val i = kb.global_id();
  kb.if_(i < kb.u32(uint32_t(count)), [&] {
    Val r = tree.root(v, i);
    if (r.type() != out_dt)
      throw std::logic_error(fmt::format("pointwise kernel of '{}' computes {} for a {} output", n.name,
                                         dtype_name(r.type()), dtype_name(out_dt)));
    out[i] = r;
  });
  kir::Kernel k = kb.finish();
  std::string name;
  for (const auto& op : tree.ops()) name += (name.empty() ? "" : "_") + op;
  if (n.op == K::Compare) name += "_" + n.attrs.get_string("mode");
  if (n.op == K::Cast) name += "_from_" + std::string(graph::dtype_name(g.type(n.inputs[0]).dtype));
  name += fmt::format("_{}_{}", graph::dtype_name(n.type.dtype), shape_tag(n.type.shape));
  bool same = true;
  for (graph::Value in : tree.loaded()) same = same && g.type(in).shape == n.type.shape;
  if (!same) {
    name += "_from";
    for (graph::Value in : tree.loaded()) name += "_" + shape_tag(g.type(in).shape);
  }
  k.name = name;
  std::vector<int32_t> bindings{ctx.buffer_of(v)};
  for (int32_t b : tree.bindings()) bindings.push_back(b);
  ctx.launch(std::move(k), std::move(bindings), {}, groups_for(count, kPointwiseWorkgroup));
}

}  // namespace spire::lowering
