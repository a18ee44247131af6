// Element-wise indexing: GatherElements, and OneHot. out[p] = data[p with its `axis` coordinate replaced by indices[p]], imported
// as ops spire has: the data, cut to the indices' extent off the axis, meets a one-hot mask of the indices along an
// extra last dimension (index == position), and a sum over that dimension keeps the one element picked. That costs
// indices x axis-length work: exact, and fine for the loss and detection heads that use it; an indexing kernel of its
// own is the way to large axes.
#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

using graph::CompareMode;
using graph::DType;
using graph::Shape;
using graph::Value;

void gather_elements(NodeContext& c) {
  auto& g = c.g();
  const graph::TensorType data = c.type(0), indices = c.type(1);
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    c.refuse(fmt::format("the indices are {}; they must be int32 or int64", graph::dtype_name(indices.dtype)));
  if (data.dtype == DType::Bool) c.refuse("GatherElements of bool tensors is not supported");
  const int64_t rank = data.rank();
  if (indices.rank() != rank || rank == 0)
    c.refuse(fmt::format("data {} and indices {} must have the same rank, at least 1",
                         graph::shape_to_string(data.shape), graph::shape_to_string(indices.shape)));
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), rank);
  const int64_t n = data.shape[size_t(axis)];
  Value x = c.value(0);
  Shape cut = data.shape;  // the data's extent the indices reach
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) continue;
    if (indices.shape[size_t(d)] > data.shape[size_t(d)])
      c.refuse(fmt::format("indices {} exceed data {} along axis {}", graph::shape_to_string(indices.shape),
                           graph::shape_to_string(data.shape), d));
    cut[size_t(d)] = indices.shape[size_t(d)];
  }
  if (cut != data.shape)
    x = g.op("slice", {x}, {{"starts", std::vector<int64_t>(size_t(rank), 0)},
                            {"steps", std::vector<int64_t>(size_t(rank), 1)}, {"shape", cut}});
  // The axis last, a 1 in its place: [.., 1, .., n], beside the indices as [.., m, .., 1].
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  Shape with_axis_last = indices.shape;
  with_axis_last[size_t(axis)] = 1;
  with_axis_last.push_back(n);
  x = g.reshape(g.permute(x, perm), with_axis_last);
  Shape indices_column = indices.shape;
  indices_column.push_back(1);
  Value index = g.reshape(c.value(1), indices_column);
  // Negative indices count from the end of the axis.
  index = g.where(g.compare(index, g.scalar(0.0, indices.dtype), CompareMode::Lt), g.add(index, double(n)), index);
  graph::Tensor positions;
  positions.dtype = indices.dtype;
  positions.shape = Shape(size_t(rank) + 1, 1);
  positions.shape.back() = n;
  for (int64_t k = 0; k < n; ++k) positions.data.push_back(double(k));
  const Value picked = g.compare(index, c.constant_value(positions, "position"), CompareMode::Eq);
  c.set_output(0, g.sum(g.where(picked, x, g.scalar(0.0, data.dtype)), {rank}));
}

// OneHot(indices, depth, values = [off, on]): a new axis of `depth` (known at import) at `axis`, on where the position
// equals the index (negative indices count from depth), off elsewhere.
void one_hot(NodeContext& c) {
  auto& g = c.g();
  const graph::TensorType idx = c.type(0), values = c.type(2);
  const graph::Tensor& depth_value = c.require_constant(1, "depth");
  if (depth_value.data.size() != 1) c.refuse("depth must be one value");
  const int64_t depth = int64_t(depth_value.data[0]);
  if (depth < 1) c.refuse(fmt::format("depth {} must be positive", depth));
  if (values.shape != Shape{2}) c.refuse("values must be [off, on]");
  const int64_t rank = idx.rank() + 1;
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), rank);
  Shape with_axis = idx.shape;
  with_axis.insert(with_axis.begin() + axis, 1);
  const DType compare_type = graph::is_float(idx.dtype) ? idx.dtype : DType::I64;
  Value index = c.value(0);
  if (idx.dtype != compare_type) index = g.cast(index, compare_type);
  index = g.reshape(index, with_axis);
  index = g.where(g.compare(index, g.scalar(0.0, compare_type), CompareMode::Lt), g.add(index, double(depth)), index);
  graph::Tensor positions;
  positions.dtype = compare_type;
  positions.shape = Shape(size_t(rank), 1);
  positions.shape[size_t(axis)] = depth;
  for (int64_t k = 0; k < depth; ++k) positions.data.push_back(double(k));
  const Value hit = g.compare(index, c.constant_value(positions, "position"), CompareMode::Eq);
  const Value v = c.value(2);
  auto pick = [&](int64_t i) {
    return g.reshape(g.op("slice", {v}, {{"starts", std::vector<int64_t>{i}}, {"steps", std::vector<int64_t>{1}},
                                         {"shape", Shape{1}}}),
                     Shape{});
  };
  c.set_output(0, g.where(hit, pick(1), pick(0)));
}

}  // namespace

void register_indexing_ops(OpTable& t) {
  t["GatherElements"] = {gather_elements, {}};
  t["OneHot"] = {one_hot, {}};
}

}  // namespace spire::onnx_import
