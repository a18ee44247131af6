// Reductions: ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceSumSquare ReduceL1 ReduceL2 ReduceLogSum
// ReduceLogSumExp, and ArgMax ArgMin Hardmax CumSum. Axes come from the attribute, or from input 1 (ReduceSum from opset 13, the others from
// opset 18); empty axes reduce everything unless noop_with_empty_axes says to pass the input through.
#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

enum class Kind { Sum, Mean, Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp };

void reduce(NodeContext& c, Kind kind, int64_t axes_input_opset) {
  auto& g = c.g();
  const int64_t rank = c.type(0).rank();
  std::vector<int64_t> axes;
  if (c.opset() >= axes_input_opset) {
    if (c.has_input(1)) axes = c.require_ints(1, "axes");
  } else {
    axes = c.attr_ints("axes");
  }
  const bool keep = c.attr_int("keepdims", 1) != 0;
  Value x = c.value(0);
  if (axes.empty()) {
    if (c.attr_int("noop_with_empty_axes", 0) != 0) return c.set_output(0, x);
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& a : axes) a = normalize_axis(c, a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.refuse("repeated axis");
  const bool is_float = graph::is_float(c.type(0).dtype);
  if (kind != Kind::Sum && kind != Kind::Max && kind != Kind::Min && !is_float)
    c.refuse(fmt::format("spire runs this reduction on float tensors only (the input is {})", graph::dtype_name(c.type(0).dtype)));
  if (c.type(0).dtype == graph::DType::Bool) c.refuse("reductions of bool tensors are not supported");
  Value y;
  switch (kind) {
    case Kind::Sum: y = g.sum(x, axes, keep); break;
    case Kind::Mean: y = g.mean(x, axes, keep); break;
    case Kind::Max: y = g.max(x, axes, keep); break;
    case Kind::Min: y = g.neg(g.max(g.neg(x), axes, keep)); break;
    case Kind::Prod: {
      // |product| = exp(sum log|x|) (a zero gives exp(-inf) = 0), its sign from the parity of the negatives.
      const graph::DType t = c.type(0).dtype;
      const Value magnitude = g.exp(g.sum(g.log(g.op("abs", {x})), axes, keep));
      const Value negatives = g.sum(g.cast(g.compare(x, g.scalar(0.0, t), graph::CompareMode::Lt), t), axes, keep);
      const Value odd = g.sub(negatives, g.mul(g.op("floor", {g.div(negatives, 2.0)}), 2.0));
      y = g.mul(magnitude, g.sub(g.scalar(1.0, t), g.mul(odd, 2.0)));
      break;
    }
    case Kind::SumSquare: y = g.sum(g.mul(x, x), axes, keep); break;
    case Kind::L1: y = g.sum(g.maximum(x, g.neg(x)), axes, keep); break;
    case Kind::L2: y = g.sqrt(g.sum(g.mul(x, x), axes, keep)); break;
    case Kind::LogSum: y = g.log(g.sum(x, axes, keep)); break;
    case Kind::LogSumExp: {
      // Shifted by the max so that large inputs do not overflow exp.
      const Value m = g.max(x, axes, true);
      Value s = g.log(g.sum(g.exp(g.sub(x, m)), axes, true));
      s = g.add(s, m);
      if (!keep) {
        graph::Shape shape;
        for (int64_t d = 0; d < rank; ++d)
          if (!std::binary_search(axes.begin(), axes.end(), d)) shape.push_back(c.type(0).shape[size_t(d)]);
        s = g.reshape(s, shape);
      }
      y = s;
      break;
    }
  }
  c.set_output(0, y);
}

// ArgMax / ArgMin: the first index of the extreme along `axis` (the last with select_last_index), as int64. Of a float
// tensor, the graph op argmax (one launch; ArgMin: argmax of the negation, exact). Of an integer tensor, the indices
// where the input equals its extreme keep their position, the others a sentinel past the ends, and a min (a max for
// the last) over the axis picks one. Positions are float32 values there, exact up to 2^24.
void arg_extreme(NodeContext& c, bool largest) {
  auto& g = c.g();
  const graph::TensorType type = c.type(0);
  if (type.dtype == graph::DType::Bool) c.refuse("ArgMax / ArgMin of bool tensors are not supported");
  const int64_t rank = type.rank();
  if (rank == 0) c.refuse("the input is a scalar; ArgMax / ArgMin need an axis");
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), rank);
  const int64_t n = type.shape[size_t(axis)];
  const bool keep = c.attr_int("keepdims", 1) != 0, last = c.attr_int("select_last_index", 0) != 0;
  const Value x = c.value(0);
  if (graph::is_float(type.dtype) && n > 0) {
    c.set_output(0, g.op("argmax", {largest ? x : g.neg(x)},
                         {{"axis", axis}, {"keepdim", keep}, {"select_last_index", last}}));
    return;
  }
  if (n > (int64_t(1) << 24)) c.refuse(fmt::format("an axis of {} elements (spire's positions are exact to 2^24)", n));
  const Value extreme = largest ? g.max(x, {axis}, true) : g.neg(g.max(g.neg(x), {axis}, true));
  graph::Tensor positions;
  positions.dtype = graph::DType::F32;
  positions.shape = graph::Shape(size_t(rank), 1);
  positions.shape[size_t(axis)] = n;
  for (int64_t k = 0; k < n; ++k) positions.data.push_back(double(k));
  const Value at = c.constant_value(positions, "position");
  const Value hit = g.compare(x, extreme, graph::CompareMode::Eq);
  const Value chosen = last ? g.max(g.where(hit, at, g.scalar(-1.0, graph::DType::F32)), {axis}, keep)
                            : g.neg(g.max(g.where(hit, g.neg(at), g.scalar(-double(n), graph::DType::F32)), {axis}, keep));
  c.set_output(0, g.cast(chosen, graph::DType::I64));
}

// Hardmax: 1 at the first largest element along the axis, 0 elsewhere. Opset 13: along `axis` (default -1); before, the
// input seen as 2-D [prod(dims < axis), prod(dims >= axis)] (axis default 1), as ONNX's row-normalizing ops had it.
void hardmax(NodeContext& c) {
  auto& g = c.g();
  const graph::TensorType type = c.type(0);
  if (!graph::is_float(type.dtype)) c.refuse("Hardmax runs on float tensors");
  const int64_t rank = std::max<int64_t>(type.rank(), 1);
  Value x = c.value(0);
  int64_t axis = normalize_axis(c, c.attr_int("axis", c.opset() >= 13 ? -1 : 1), rank);
  if (c.opset() < 13) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < type.rank(); ++d) (d < axis ? outer : inner) *= type.shape[size_t(d)];
    x = g.reshape(x, {outer, inner});
    axis = 1;
  }
  const graph::Shape shape = g.type(x).shape;
  const int64_t n = shape[size_t(axis)];
  if (n > (int64_t(1) << 24)) c.refuse(fmt::format("Hardmax along {} elements (positions are exact to 2^24)", n));
  graph::Tensor positions;
  positions.dtype = graph::DType::F32;
  positions.shape = graph::Shape(shape.size(), 1);
  positions.shape[size_t(axis)] = n;
  for (int64_t k = 0; k < n; ++k) positions.data.push_back(double(k));
  const Value at = c.constant_value(positions, "position");
  const Value hit = g.compare(x, g.max(x, {axis}, true), graph::CompareMode::Eq);
  const Value first = g.neg(g.max(g.where(hit, g.neg(at), g.scalar(-double(n), graph::DType::F32)), {axis}, true));
  Value y = g.cast(g.compare(at, first, graph::CompareMode::Eq), type.dtype);
  if (c.opset() < 13) y = g.reshape(y, type.shape);
  c.set_output(0, y);
}

// CumSum along `axis` (input 1, known at import): a product with a triangular matrix of ones over the axis moved last
// (exclusive: the diagonal left out; reverse: the other triangle).
void cumsum(NodeContext& c) {
  auto& g = c.g();
  const graph::TensorType type = c.type(0);
  if (!graph::is_float(type.dtype)) c.refuse("CumSum runs on float tensors here (as a product)");
  const int64_t rank = type.rank();
  if (rank == 0) c.refuse("CumSum of a scalar");
  const std::vector<int64_t> axis_value = c.require_ints(1, "axis");
  if (axis_value.size() != 1) c.refuse("axis must be one value");
  const int64_t axis = normalize_axis(c, axis_value[0], rank);
  const bool exclusive = c.attr_int("exclusive", 0) != 0, reverse = c.attr_int("reverse", 0) != 0;
  const int64_t n = type.shape[size_t(axis)];
  if (n > (int64_t(1) << 13)) c.refuse(fmt::format("CumSum along {} elements (its product form takes at most 2^13)", n));
  graph::Tensor tri;  // [n (from), n (to)]: 1 where element `from` counts toward `to`
  tri.dtype = type.dtype;
  tri.shape = {n, n};
  for (int64_t from = 0; from < n; ++from)
    for (int64_t to = 0; to < n; ++to) {
      const bool before = reverse ? from > to : from < to;
      tri.data.push_back(before || (!exclusive && from == to) ? 1.0 : 0.0);
    }
  const auto [to_last, back] = axis_last(rank, axis);
  Value x = c.value(0);
  if (axis != rank - 1) x = g.permute(x, to_last);
  Value y = g.matmul(rank == 1 ? g.reshape(x, {1, n}) : x, c.constant_value(tri, "cumsum_triangle"));
  if (rank == 1) y = g.reshape(y, {n});
  if (axis != rank - 1) y = g.permute(y, back);
  c.set_output(0, y);
}

}  // namespace

void register_reduce_ops(OpTable& t) {
  add_graph_ops(t, {{"Hardmax", hardmax}, {"CumSum", cumsum}});
  t["ArgMax"] = {[](NodeContext& c) { arg_extreme(c, true); }, {}};
  t["ArgMin"] = {[](NodeContext& c) { arg_extreme(c, false); }, {}};
  auto row = [&](const char* op, Kind k, int64_t axes_input_opset) {
    t[op] = {[k, axes_input_opset](NodeContext& c) { reduce(c, k, axes_input_opset); }, {}};
  };
  row("ReduceSum", Kind::Sum, 13);
  row("ReduceMean", Kind::Mean, 18);
  row("ReduceMax", Kind::Max, 18);
  row("ReduceMin", Kind::Min, 18);
  row("ReduceProd", Kind::Prod, 18);
  row("ReduceSumSquare", Kind::SumSquare, 18);
  row("ReduceL1", Kind::L1, 18);
  row("ReduceL2", Kind::L2, 18);
  row("ReduceLogSum", Kind::LogSum, 18);
  row("ReduceLogSumExp", Kind::LogSumExp, 18);
}

}  // namespace spire::onnx_import
