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

// The flat index in shape `to` of element `index` of shape `from` (same rank) moved by `offset` along each dimension:
// where a fused slice reads its input (offset: its starts) or a concat one of its pieces (offset: minus the piece's
// start along the axis, the coordinate there clamped into the piece by the caller's select).
Val moved_index(kir::KernelBuilder& kb, Val index, const graph::Shape& from, const graph::Shape& to,
                const std::vector<int64_t>& offset, size_t clamp_axis = SIZE_MAX) {
  Val out = kb.u32(0);
  int64_t from_stride = 1, to_stride = 1;
  for (size_t d = from.size(); d-- > 0;) {
    Val coordinate = from[d] == 1 ? kb.u32(0) : (index / uint32_t(from_stride)) % uint32_t(from[d]);
    if (d == clamp_axis) {
      // The piece's own coordinate, clamped into it (from `-offset` to `-offset + to[d] - 1` in `from`'s coordinates).
      const uint32_t first = uint32_t(-offset[d]);
      coordinate = kir::min(kir::max(coordinate, kb.u32(first)), kb.u32(first + uint32_t(to[d]) - 1)) - first;
    } else if (offset[d] != 0) {
      coordinate = coordinate + uint32_t(offset[d]);
    }
    if (to[d] != 1) out = out + coordinate * uint32_t(to_stride);
    from_stride *= from[d];
    to_stride *= to[d];
  }
  return out;
}

}  // namespace

bool computes_by_index(const graph::Graph& g, graph::Value v) {
  const std::string_view op = graph::op_name(g.node(v).op);
  if (op == "concat" || op == "gather") return true;
  if (op != "slice") return false;
  for (int64_t step : g.node(v).attrs.get_ints("steps"))
    if (step != 1) return false;
  return true;
}

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
  // A fused slice reads its input at the element its starts move to; a fused concat reads each piece where the element
  // falls in it and selects by the coordinate along its axis (fuse.h: a rotary embedding's rotate_half).
  if (computes_by_index(g_, v)) {
    ops_.push_back(std::string(graph::op_name(n.op)));
    if (graph::op_name(n.op) == "slice") {
      const graph::Value in = n.inputs[0];
      return value(in, moved_index(kb_, index, n.type.shape, g_.type(in).shape, n.attrs.get_ints("starts")), false);
    }
    if (graph::op_name(n.op) == "gather") return gathered(v, index);
    const size_t axis = size_t(n.attrs.get_int("axis"));
    int64_t inner = 1;
    for (size_t d = axis + 1; d < n.type.shape.size(); ++d) inner *= n.type.shape[d];
    Val coordinate = (index / uint32_t(inner)) % uint32_t(n.type.shape[axis]);
    // (bf16 values are only loaded, stored and converted: they are chosen between as f32, which holds them exactly.)
    const kir::Type type = device_type(n.type.dtype);
    const bool via_f32 = type == kir::Type::BF16;
    Val r;
    int64_t start = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const graph::Value in = n.inputs[k];
      std::vector<int64_t> offset(n.type.shape.size(), 0);
      offset[axis] = -start;
      Val piece = value(in, moved_index(kb_, index, n.type.shape, g_.type(in).shape, offset, axis), false);
      if (via_f32) piece = kir::cast(piece, kir::Type::F32);
      r = k == 0 ? piece : kir::select(coordinate < uint32_t(start), r, piece);
      start += g_.type(in).shape[axis];
    }
    return via_f32 ? kir::cast(r, type) : r;
  }
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

// A fused gather's element: the data row its index names (0 outside the axis, as lower_indexing.cpp's gather).
Val PointwiseTree::gathered(graph::Value v, Val index) {
  const graph::Node& n = g_.node(v);
  const graph::Value data = n.inputs[0], indices = n.inputs[1];
  const GatherDims d = gather_dims(g_.type(data).shape, n.attrs.get_int("axis"), g_.type(indices).numel());
  Val outer = index / uint32_t(d.count * d.inner);
  Val k = (index / uint32_t(d.inner)) % uint32_t(d.count);
  Val rest = index % uint32_t(d.inner);
  Val ok;
  Val row = kir::cast(wrapped_row(value(indices, k, false), d.rows, &ok), kir::Type::U32);
  Val x = value(data, (outer * uint32_t(d.rows) + row) * uint32_t(d.inner) + rest, false);
  // (Half values are only converted in kernels: chosen between as f32, which holds them exactly.)
  if (x.type() == kir::Type::BF16 || x.type() == kir::Type::F16)
    return kir::cast(kir::select(ok, kir::cast(x, kir::Type::F32), kb_.f32(0.0f)), x.type());
  return kir::select(ok, x, kb_.constant(x.type(), 0));
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

std::vector<int32_t> compute_loads_in_place(LoweringContext& ctx, kir::Kernel& kernel,
                                            const std::vector<std::pair<uint32_t, graph::Value>>& loads) {
  kir::KernelBuilder kb(std::move(kernel));
  PointwiseTree tree(ctx, kb);
  std::vector<std::string> ops;
  for (const auto& [index, root] : loads)
    kb.rewrite_loads(index, [&, root = root](kir::Val at) {
      tree.forget_computed();  // each load is another element
      kir::Val v = tree.root(root, at.type() == kir::Type::U32 ? at : kir::cast(at, kir::Type::U32));
      if (ops.empty()) ops = tree.ops();
      return v;
    });
  kernel = kb.finish();
  for (const std::string& op : ops) kernel.name += "_" + op;
  return tree.bindings();
}

}  // namespace spire::lowering
