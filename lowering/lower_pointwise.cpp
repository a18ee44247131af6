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

namespace spire::lowering {

using kir::Type;
using kir::Val;

namespace {

// Bits that fit the device type: bool 0/1, i64 must fit the i32 it is stored as.
double device_constant(const graph::Node& n, double value) {
  if (n.type.dtype == graph::DType::Bool) return value != 0 ? 1 : 0;
  if (n.type.dtype == graph::DType::I64 &&
      (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()))
    throw graph::GraphError(fmt::format("constant '{}' = {} does not fit the 32-bit integers i64 is stored as on "
                                        "devices", n.name, value));
  return value;
}

}  // namespace

kir::Kernel copy_kernel(Type type, int64_t n) {
  return gather_kernel(fmt::format("copy_{}_{}", kir::type_name(type), n), type, n, IndexMap::strided({n}, {1}));
}

kir::Kernel gather_kernel(const std::string& name, Type type, int64_t n, const IndexMap& map) {
  kir::KernelBuilder kb(name, kPointwiseWorkgroup);
  kir::Buf x = kb.buffer("x", type, kir::Access::Read);
  kir::Buf y = kb.buffer("y", type, kir::Access::Write);
  Val i = kb.global_id();
  kb.if_(i < kb.u32(uint32_t(n)), [&] { y[i] = x[map.is_identity() ? i : map.emit(kb, i)]; });
  return kb.finish();
}

namespace {

// One element of node `v` from its operands' values (already loaded or computed, in device types): the
// formula of the op's table entry.
Val pointwise_body(kir::KernelBuilder& kb, const graph::Graph& g, graph::Value v, const std::vector<Val>& a) {
  const graph::Node& n = g.node(v);
  const graph::OpInfo& info = graph::op_info(n.op);
  if (!info.formula)
    throw graph::GraphError(fmt::format("op {} ('{}') is not pointwise", graph::op_name(n.op), n.name));
  std::vector<graph::DType> in_dtypes;
  for (graph::Value in : n.inputs) in_dtypes.push_back(g.type(in).dtype);
  return info.formula({kb, n, in_dtypes, a, device_type(n.type.dtype)});
}

// Emits the expression tree rooted at a node: fused inputs are computed in place, other inputs loaded
// (one buffer binding per distinct value), scalar constants folded.
class TreeEmitter {
 public:
  TreeEmitter(LoweringContext& ctx, kir::KernelBuilder& kb) : ctx_(ctx), g_(ctx.graph()), kb_(kb) {}

  // The value of `v`'s element `index` (an element index in v's own shape).
  Val value(graph::Value v, Val index) {
    const graph::Node& n = g_.node(v);
    if (n.op == graph::OpKind::Constant)
      return kb_.constant(device_type(n.type.dtype), device_constant(n, n.attrs.get_float("value")));
    if (ctx_.fused(v)) return compute(v, index);
    return buffer(v)[index];
  }

  // `v` computed from its inputs at `index`.
  Val compute(graph::Value v, Val index) {
    const graph::Node& n = g_.node(v);
    ops_.push_back(std::string(graph::op_name(n.op)));
    std::vector<Val> args;
    for (graph::Value in : n.inputs) {
      IndexMap map = IndexMap::broadcast(n.type.shape, g_.type(in).shape);
      args.push_back(value(in, map.is_identity() ? index : map.emit(kb_, index)));
    }
    return pointwise_body(kb_, g_, v, args);
  }

  std::vector<int32_t> bindings() const { return bindings_; }
  const std::vector<std::string>& ops() const { return ops_; }
  const std::vector<graph::Value>& loaded() const { return loaded_; }

 private:
  kir::Buf buffer(graph::Value v) {
    auto it = bufs_.find(v.id);
    if (it != bufs_.end()) return it->second;
    kir::Buf b = kb_.buffer(fmt::format("in{}", bufs_.size()), device_type(g_.type(v).dtype), kir::Access::Read);
    bufs_.emplace(v.id, b);
    bindings_.push_back(ctx_.buffer_of(v));
    loaded_.push_back(v);
    return b;
  }

  LoweringContext& ctx_;
  const graph::Graph& g_;
  kir::KernelBuilder& kb_;
  std::map<int32_t, kir::Buf> bufs_;
  std::vector<int32_t> bindings_;
  std::vector<graph::Value> loaded_;
  std::vector<std::string> ops_;
};

}  // namespace

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
  TreeEmitter tree(ctx, kb);
  Val i = kb.global_id();
  kb.if_(i < kb.u32(uint32_t(count)), [&] {
    Val r = tree.compute(v, i);
    if (r.type() != out_dt)
      throw std::logic_error(fmt::format("pointwise kernel of '{}' computes {} for a {} output", n.name,
                                         kir::type_name(r.type()), kir::type_name(out_dt)));
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
