#include "lowering/pointwise_tree.h"

#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/graph/op_table.h"
#include "lowering/index_map.h"

namespace spire::lowering {

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

}  // namespace

Val PointwiseTree::value(graph::Value v, Val index, bool at_root_element) {
  const graph::Node& n = g_.node(v);
  if (auto s = substitutes_.find(v.id); s != substitutes_.end()) {
    if (!at_root_element)
      throw std::logic_error(fmt::format("pointwise tree: '{}' is substituted but read through a broadcast", n.name));
    return s->second;
  }
  if (n.op == graph::OpKind::Constant)
    return kb_.constant(device_type(n.type.dtype), device_constant(n, n.attrs.get_float("value")));
  if (ctx_.fused(v) || in_place_.count(v.id)) return compute(v, index, at_root_element);
  if (!at_root_element) return buffer(v)[index];
  if (auto c = computed_.find(v.id); c != computed_.end()) return c->second;
  return computed_[v.id] = buffer(v)[index];
}

Val PointwiseTree::compute(graph::Value v, Val index, bool at_root_element) {
  if (at_root_element)
    if (auto c = computed_.find(v.id); c != computed_.end()) return c->second;
  const graph::Node& n = g_.node(v);
  // A fused reshape (fuse.h: a cast read through a broadcast) keeps every element's linear index: its input there.
  if (n.op == graph::OpKind::Reshape || n.op == graph::OpKind::Flatten) return value(n.inputs[0], index, at_root_element);
  ops_.push_back(std::string(graph::op_name(n.op)));
  std::vector<Val> args;
  for (graph::Value in : n.inputs) {
    IndexMap map = IndexMap::broadcast(n.type.shape, g_.type(in).shape);
    // The same shape reads the same element: a map over size-1 dimensions only (one element) has no terms, so
    // is_identity() cannot say so (a [1,1] product's epilogue, substituted, read here).
    const bool identity =
        g_.type(in).shape == n.type.shape || (map.is_identity() && g_.type(in).numel() == n.type.numel());
    args.push_back(value(in, identity ? index : map.emit(kb_, index), at_root_element && identity));
  }
  Val r = pointwise_body(kb_, g_, v, args);
  if (at_root_element) computed_[v.id] = r;
  return r;
}

kir::Buf PointwiseTree::buffer(graph::Value v) {
  auto it = bufs_.find(v.id);
  if (it != bufs_.end()) return it->second;
  kir::Buf b = kb_.buffer(fmt::format("in{}", bufs_.size()), device_type(g_.type(v).dtype), kir::Access::Read);
  bufs_.emplace(v.id, b);
  bindings_.push_back(ctx_.buffer_of(v));
  loaded_.push_back(v);
  return b;
}

}  // namespace spire::lowering
