// Element-wise indexing: GatherElements, ScatterElements (and Scatter), OneHot, GatherND, ScatterND, Compress and
// ReverseSequence. out[p] = data[p with its `axis` coordinate replaced by indices[p]], imported
// as ops spire has: the data, cut to the indices' extent off the axis, meets a one-hot mask of the indices along an
// extra last dimension (index == position), and a sum over that dimension keeps the one element picked. That costs
// indices x axis-length work: exact, and fine for the loss and detection heads that use it; an indexing kernel of its
// own is the way to large axes.
#include <algorithm>
#include <array>
#include <map>

#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

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
  if (n > (int64_t(1) << 24)) c.refuse(fmt::format("an axis of {} elements (the one-hot form takes at most 2^24)", n));
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
  if (depth < 1 || depth > (int64_t(1) << 24)) c.refuse(fmt::format("depth {} must be in [1, 2^24]", depth));
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

// A scatter's data, indices and updates, refused where spire cannot scatter them: indices other than int32 or int64,
// bool data.
std::array<graph::TensorType, 3> scatter_operands(NodeContext& c) {
  const graph::TensorType data = c.type(0), indices = c.type(1), updates = c.type(2);
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    c.refuse(fmt::format("the indices are {}; they must be int32 or int64", graph::dtype_name(indices.dtype)));
  if (data.dtype == DType::Bool) c.refuse("scattering bool tensors is not supported");
  return {data, indices, updates};
}

// ScatterElements (and the older Scatter): data with updates[q] written at q's position, its `axis` coordinate replaced
// by indices[q]; reduction add sums them into data instead. Along the axis, a one-hot of the indices [.., n, m] picks,
// for each of the axis's n positions, the sum of the m updates aimed at it, and whether any is. The indices must span
// the data on every other axis (what detection and loss code scatter); repeated indices are only defined for add.
void scatter_elements(NodeContext& c) {
  auto& g = c.g();
  const std::array<graph::TensorType, 3> operands = scatter_operands(c);
  const graph::TensorType &data = operands[0], &indices = operands[1], &updates = operands[2];
  if (updates.dtype != data.dtype || updates.shape != indices.shape)
    c.refuse("the updates must have the data's type and the indices' shape");
  const int64_t rank = data.rank();
  if (indices.rank() != rank || rank == 0) c.refuse("data and indices must have the same rank, at least 1");
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.shape[size_t(d)] != data.shape[size_t(d)])
      c.refuse(fmt::format("indices {} must span data {} on every axis but {}", graph::shape_to_string(indices.shape),
                           graph::shape_to_string(data.shape), axis));
  const std::string reduction = c.attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add") c.refuse(fmt::format("reduction '{}' (spire has none and add)", reduction));
  const int64_t n = data.shape[size_t(axis)], m = indices.shape[size_t(axis)];
  if (n > (int64_t(1) << 24)) c.refuse(fmt::format("an axis of {} elements (the one-hot form takes at most 2^24)", n));
  const auto [to_last, back] = axis_last(rank, axis);
  auto last = [&](Value v) { return axis == rank - 1 ? v : g.permute(v, to_last); };
  Shape rows = data.shape;  // the other axes in order, then the axis
  rows.erase(rows.begin() + axis);
  Shape column = rows, row = rows;
  column.push_back(1);
  column.push_back(m);  // [.., 1, m]
  row.push_back(n);     // [.., n]
  Value index = g.reshape(last(c.value(1)), column);
  index = g.where(g.compare(index, g.scalar(0.0, indices.dtype), CompareMode::Lt), g.add(index, double(n)), index);
  graph::Tensor positions;
  positions.dtype = indices.dtype;
  positions.shape = Shape(size_t(rank) + 1, 1);
  positions.shape[size_t(rank) - 1] = n;  // [.., n, 1]
  for (int64_t k = 0; k < n; ++k) positions.data.push_back(double(k));
  const Value hit = g.compare(index, c.constant_value(positions, "position"), CompareMode::Eq);  // [.., n, m]
  const Value aimed = g.sum(g.where(hit, g.reshape(last(c.value(2)), column), g.scalar(0.0, data.dtype)), {rank});
  const Value x = last(c.value(0));
  Value y;
  if (reduction == "add") {
    y = g.add(x, aimed);
  } else {
    const Value any = g.sum(g.cast(hit, DType::F32), {rank});
    y = g.where(g.compare(any, g.scalar(0.0, DType::F32), CompareMode::Gt), aimed, x);
  }
  c.set_output(0, axis == rank - 1 ? y : g.permute(y, back));
}

// The index tuples of input `input` ([.., k], the last axis the tuple) as one flat index each, into a block of the k
// axes whose lengths are `axes` made one (row-major): each index wrapped when negative, times its stride, summed.
// `outside` is true where an index lies outside its axis; `block` is the block's size. Shapes: indices' with a last
// axis of 1.
struct TupleIndex {
  Value flat, outside;
  int64_t block = 1;
};
TupleIndex tuple_index(NodeContext& c, int input, const Shape& axes) {
  auto& g = c.g();
  const graph::TensorType indices = c.type(input);
  Shape one = indices.shape;  // [.., 1]: one index of the tuple
  one.back() = 1;
  const Value zero = g.scalar(0.0, indices.dtype);
  TupleIndex t;
  for (int64_t j = int64_t(axes.size()) - 1; j >= 0; --j) {
    std::vector<int64_t> starts(size_t(indices.rank()), 0);
    starts.back() = j;
    Value index = g.op("slice", {c.value(input)},
                       {{"starts", starts}, {"steps", std::vector<int64_t>(size_t(indices.rank()), 1)}, {"shape", one}});
    const double dim = double(axes[size_t(j)]);
    index = g.where(g.compare(index, zero, CompareMode::Lt), g.add(index, dim), index);
    const Value outside = g.where(g.compare(index, zero, CompareMode::Lt), g.scalar(1.0, DType::Bool),
                                  g.compare(index, g.scalar(dim, indices.dtype), CompareMode::Ge));
    t.outside = t.outside.valid() ? g.where(outside, outside, t.outside) : outside;
    const Value term = t.block == 1 ? index : g.mul(index, double(t.block));
    t.flat = t.flat.valid() ? g.add(t.flat, term) : term;
    t.block *= axes[size_t(j)];
  }
  return t;
}

// GatherND: out[b.., i..] = data[b.., indices[b.., i.., 0], .., indices[b.., i.., k-1], ...] with the batch_dims leading
// axes b shared by data and indices. The batch axes and the k indexed axes of the data become one (the flat index a sum
// of each index times its stride, negative ones wrapped first, plus the batch's offset), and the graph's gather op takes
// the slices at those flat indices. An index outside its axis makes the whole flat index point past the data, which the
// gather op refuses (the reference) or reads as 0 (devices): never a neighbouring element, never out of bounds.
void gather_nd(NodeContext& c) {
  auto& g = c.g();
  const graph::TensorType data = c.type(0), indices = c.type(1);
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    c.refuse(fmt::format("the indices are {}; they must be int32 or int64", graph::dtype_name(indices.dtype)));
  if (indices.rank() < 1) c.refuse("the indices must have rank 1 or more");
  const int64_t b = c.attr_int("batch_dims", 0), k = indices.shape.back(), rank = data.rank();
  if (b < 0 || b >= std::min(rank, indices.rank()))
    c.refuse(fmt::format("batch_dims {} for rank-{} data and rank-{} indices", b, rank, indices.rank()));
  for (int64_t d = 0; d < b; ++d)
    if (data.shape[size_t(d)] != indices.shape[size_t(d)])
      c.refuse(fmt::format("data {} and indices {} differ on batch axis {}", graph::shape_to_string(data.shape),
                           graph::shape_to_string(indices.shape), d));
  if (k < 1 || b + k > rank) c.refuse(fmt::format("index tuples of {} for rank-{} data with {} batch axes", k, rank, b));
  const TupleIndex tuple = tuple_index(c, 1, Shape(data.shape.begin() + b, data.shape.begin() + b + k));
  Value flat = tuple.flat;
  const int64_t stride = tuple.block;
  // The batch's offset: batch axes' linear position times the indexed block's size.
  int64_t batches = 1;
  for (int64_t d = 0; d < b; ++d) batches *= data.shape[size_t(d)];
  if (b > 0) {
    Shape at(size_t(indices.rank()), 1);
    for (int64_t d = 0; d < b; ++d) at[size_t(d)] = data.shape[size_t(d)];
    graph::Tensor offsets(indices.dtype, at);
    for (int64_t q = 0; q < batches; ++q) offsets.data[size_t(q)] = double(q * stride);
    flat = g.add(flat, c.constant_value(offsets, c.node().output(0) + ".batch_offsets"));
  }
  const int64_t rows = batches * stride;
  flat = g.where(tuple.outside, g.scalar(double(rows), indices.dtype), flat);
  Shape flat_shape(indices.shape.begin(), indices.shape.end() - 1);
  flat = g.reshape(flat, flat_shape);
  Shape data_flat = {rows};
  data_flat.insert(data_flat.end(), data.shape.begin() + b + k, data.shape.end());
  Value y = g.op("gather", {g.reshape(c.value(0), data_flat), flat}, {{"axis", int64_t(0)}});
  c.set_output(0, y);
}

// Compress(input, condition[, axis]): the rows along `axis` (of the flattened input when there is none) whose
// condition is true. The result's length depends on the condition's values, so they must be known at import; the
// rows are then a gather with constant indices. A condition shorter than the axis leaves the rest out; a longer one
// is an error (ONNX).
void compress(NodeContext& c) {
  auto& g = c.g();
  const graph::Tensor& condition = c.require_constant(1, "condition (it fixes the result's length)");
  if (condition.shape.size() != 1) c.refuse("the condition must be 1-D");
  Value x = c.value(0);
  graph::TensorType in = c.type(0);
  int64_t axis = 0;
  if (c.attr("axis")) {
    axis = normalize_axis(c, c.attr_int("axis", 0), in.rank());
  } else {
    x = g.reshape(x, {in.numel()});
    in.shape = {in.numel()};
  }
  const int64_t n = in.shape[size_t(axis)];
  if (condition.numel() > n)
    c.refuse(fmt::format("a condition of {} for an axis of {}", condition.numel(), n));
  graph::Tensor rows(DType::I64, {0});
  for (int64_t k = 0; k < condition.numel(); ++k)
    if (condition.data[size_t(k)] != 0) rows.data.push_back(double(k));
  rows.shape = {int64_t(rows.data.size())};
  c.set_output(0, g.op("gather", {x, c.constant_value(rows, c.node().output(0) + ".rows")}, {{"axis", axis}}));
}

// The flat row of each index tuple of `indices` [.., k] into data whose k leading axes are made one (negative indices
// wrapped); a tuple with an index outside its axis gets the row past the end, `rows`, which no position matches and
// the gather op refuses (the reference) or reads as 0 (devices). Shape: indices' without the last axis.
Value flat_rows(NodeContext& c, int input, const Shape& data, int64_t rows) {
  auto& g = c.g();
  const graph::TensorType indices = c.type(input);
  const int64_t k = indices.shape.back();
  const TupleIndex tuple = tuple_index(c, input, Shape(data.begin(), data.begin() + k));
  const Value flat = g.where(tuple.outside, g.scalar(double(rows), indices.dtype), tuple.flat);
  return g.reshape(flat, Shape(indices.shape.begin(), indices.shape.end() - 1));
}

// ScatterND(data, indices [.., k], updates): data with each update slice written at (reduction add: added to, mul:
// multiplied into) the data's slice its index tuple names. The k leading axes of the data become one of R rows; a
// one-hot of the m tuples' rows [R, m] picks, per row, the update aimed at it, as ScatterElements does (R x m x slice
// work). Repeated tuples are summed with add, multiplied in turn with mul (which needs the indices known at import, to
// know each row's updates), and undefined without a reduction, as in ONNX. A tuple outside the data aims at no row.
void scatter_nd(NodeContext& c) {
  auto& g = c.g();
  const std::array<graph::TensorType, 3> operands = scatter_operands(c);
  const graph::TensorType &data = operands[0], &indices = operands[1], &updates = operands[2];
  if (indices.rank() < 1) c.refuse("the indices must have rank 1 or more");
  const int64_t k = indices.shape.back(), rank = data.rank();
  if (k < 1 || k > rank) c.refuse(fmt::format("index tuples of {} for rank-{} data", k, rank));
  Shape want(indices.shape.begin(), indices.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + k, data.shape.end());
  if (updates.dtype != data.dtype || updates.shape != want)
    c.refuse(fmt::format("updates {} must be {} of the data's type", graph::shape_to_string(updates.shape),
                         graph::shape_to_string(want)));
  const std::string reduction = c.attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    c.refuse(fmt::format("reduction '{}' (spire has none, add and mul)", reduction));
  int64_t rows = 1, slice = 1;
  for (int64_t d = 0; d < k; ++d) rows *= data.shape[size_t(d)];
  for (int64_t d = k; d < rank; ++d) slice *= data.shape[size_t(d)];
  const int64_t m = indices.numel() / k;
  if (rows * m * slice > (int64_t(1) << 26))
    c.refuse(fmt::format("{} rows x {} updates x {} elements (the one-hot form takes at most 2^26)", rows, m, slice));
  const Value x = g.reshape(c.value(0), {rows, slice});
  if (reduction == "mul") {
    // The indices known at import: the n-th update aimed at each row (n counted in index order) multiplies in at
    // step n, each step a one-hot sum over a constant mask, as many steps as a row is aimed at most.
    const graph::Tensor& known = c.require_constant(1, "the indices (mul multiplies repeated ones in turn)");
    std::vector<int64_t> row_of(static_cast<size_t>(m)), nth(static_cast<size_t>(m));
    std::map<int64_t, int64_t> times;
    for (int64_t q = 0; q < m; ++q) {
      int64_t r = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t v = int64_t(known.data[size_t(q * k + j)]);
        const int64_t dim = data.shape[size_t(j)];
        if (v < -dim || v >= dim) c.refuse(fmt::format("index {} is outside an axis of {}", v, dim));
        r = r * dim + (v < 0 ? v + dim : v);
      }
      row_of[size_t(q)] = r;
      nth[size_t(q)] = times[r]++;
    }
    int64_t steps = 0;
    for (const auto& [r, n] : times) steps = std::max(steps, n);
    if (steps > 64) c.refuse(fmt::format("a row aimed at {} times with reduction mul (at most 64)", steps));
    Value y = x;
    for (int64_t step = 0; step < steps; ++step) {
      graph::Tensor mask(DType::Bool, {rows, m, 1});
      graph::Tensor aimed_at(DType::Bool, {rows, 1});
      for (int64_t q = 0; q < m; ++q)
        if (nth[size_t(q)] == step) {
          mask.data[size_t(row_of[size_t(q)] * m + q)] = 1;
          aimed_at.data[size_t(row_of[size_t(q)])] = 1;
        }
      const std::string name = fmt::format("{}.step{}", c.node().output(0), step);
      const Value factor = g.sum(g.where(c.constant_value(mask, name), g.reshape(c.value(2), {1, m, slice}),
                                         g.scalar(0.0, data.dtype)), {1});
      y = g.where(c.constant_value(aimed_at, name + ".rows"), g.mul(y, factor), y);
    }
    return c.set_output(0, g.reshape(y, data.shape));
  }
  const Value flat = g.reshape(flat_rows(c, 1, data.shape, rows), {1, m, 1});  // [1, m, 1]
  graph::Tensor positions(indices.dtype, {rows, 1, 1});
  for (int64_t r = 0; r < rows; ++r) positions.data[size_t(r)] = double(r);
  const Value hit = g.compare(flat, c.constant_value(positions, c.node().output(0) + ".rows"), CompareMode::Eq);  // [R, m, 1]
  const Value aimed = g.sum(g.where(hit, g.reshape(c.value(2), {1, m, slice}), g.scalar(0.0, data.dtype)), {1});
  Value y;
  if (reduction == "add") {
    y = g.add(x, aimed);
  } else {
    const Value any = g.compare(g.sum(g.cast(hit, DType::F32), {1}), g.scalar(0.0, DType::F32), CompareMode::Gt);  // [R, 1]
    y = g.where(any, aimed, x);
  }
  c.set_output(0, g.reshape(y, data.shape));
}

// ReverseSequence(x, sequence_lens): along time_axis, each batch element's first sequence_lens[b] steps reversed, the
// rest kept. The lengths are known at import: the time and batch axes become one and a gather with constant indices
// reorders it.
void reverse_sequence(NodeContext& c) {
  auto& g = c.g();
  const graph::TensorType x = c.type(0);
  const int64_t rank = x.rank();
  if (rank < 2) c.refuse("the input needs rank >= 2");
  const int64_t time = normalize_axis(c, c.attr_int("time_axis", 0), rank);
  const int64_t batch = normalize_axis(c, c.attr_int("batch_axis", 1), rank);
  if (time == batch || std::max(time, batch) > 1) c.refuse("time_axis and batch_axis must be 0 and 1");
  const auto lengths = c.require_ints(1, "sequence_lens");
  const int64_t steps = x.shape[size_t(time)], batches = x.shape[size_t(batch)];
  if (int64_t(lengths.size()) != batches) c.refuse("sequence_lens must have one length per batch element");
  for (int64_t n : lengths)
    if (n < 0 || n > steps) c.refuse(fmt::format("a sequence length of {} outside [0, {}]", n, steps));
  // Row (a0, a1) of the [axis 0, axis 1] pair reads row (a0', a1') with the time coordinate reversed within its length.
  const int64_t d0 = x.shape[0], d1 = x.shape[1];
  graph::Tensor rows(DType::I64, {d0 * d1});
  for (int64_t a0 = 0; a0 < d0; ++a0)
    for (int64_t a1 = 0; a1 < d1; ++a1) {
      int64_t t = time == 0 ? a0 : a1;
      const int64_t b = time == 0 ? a1 : a0, n = lengths[size_t(b)];
      if (t < n) t = n - 1 - t;
      rows.data[size_t(a0 * d1 + a1)] = double(time == 0 ? t * d1 + b : b * d1 + t);
    }
  Shape merged = {d0 * d1};
  merged.insert(merged.end(), x.shape.begin() + 2, x.shape.end());
  const Value y = g.op("gather", {g.reshape(c.value(0), merged), c.constant_value(rows, c.node().output(0) + ".rows")},
                       {{"axis", int64_t(0)}});
  c.set_output(0, g.reshape(y, x.shape));
}

}  // namespace

void register_indexing_ops(OpTable& t) {
  add_graph_ops(t, {{"GatherND", gather_nd}, {"GatherElements", gather_elements}, {"ScatterElements", scatter_elements},
                    {"Scatter", scatter_elements}, {"OneHot", one_hot}, {"Compress", compress},
                    {"ScatterND", scatter_nd}, {"ReverseSequence", reverse_sequence}});
}

}  // namespace spire::onnx_import
