// TopK: the k largest (or smallest) elements along an axis, sorted, with their positions; equal elements keep their
// order (the lower index first), as ONNX specifies. Imported as ops spire has, with k known at import: each element's
// rank is the count of elements that beat it (greater, or equal and earlier), an n x n comparison per row; output
// position r then takes the one element whose rank is r, a one-hot sum that is exact. That costs n^2 per row, fine
// for the few hundred candidates of a detection head; a sorting kernel of its own is the way to long rows.
#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

// The most comparison elements (rows x n x n) the rank form builds.
constexpr int64_t kMaxComparisons = int64_t(1) << 26;

void top_k(NodeContext& c) {
  auto& g = c.g();
  const graph::TensorType in = c.type(0);
  if (in.dtype == DType::Bool) c.refuse("TopK of bool tensors");
  if (in.rank() < 1) c.refuse("TopK needs an input of rank 1 or more");
  const int64_t rank = in.rank();
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), rank);
  const int64_t n = in.shape[size_t(axis)];
  int64_t k = 0;
  if (c.opset() < 10) {
    k = c.attr_int("k", -1);
  } else {
    const auto ks = c.require_ints(1, "k");
    if (ks.size() != 1) c.refuse(fmt::format("k must be one value, not {}", ks.size()));
    k = ks[0];
  }
  if (k < 1 || k > n) c.refuse(fmt::format("k = {} for an axis of {} elements (1 <= k <= {})", k, n, n));
  const int64_t rows = n == 0 ? 0 : in.numel() / n;
  if (n > (int64_t(1) << 24) || rows * n * n > kMaxComparisons)
    c.refuse(fmt::format("{} rows of {} elements: the n^2 rank form takes at most 2^26 comparisons", rows, n));
  const bool largest = c.attr_int("largest", 1) != 0;

  const auto [to_last, back] = axis_last(rank, axis);
  const Value x = axis == rank - 1 ? c.value(0) : g.permute(c.value(0), to_last);
  Shape lead = g.type(x).shape;  // the other axes, then n
  lead.pop_back();
  auto with = [&](std::initializer_list<int64_t> tail) {
    Shape s = lead;
    s.insert(s.end(), tail);
    return s;
  };
  // a: element i as [.., n, 1]; b: element j as [.., 1, n]. j beats i when it is strictly better, or equal and earlier.
  const Value a = g.reshape(x, with({n, 1})), b = g.reshape(x, with({1, n}));
  const CompareMode better = largest ? CompareMode::Gt : CompareMode::Lt;
  const CompareMode not_worse = largest ? CompareMode::Ge : CompareMode::Le;
  Tensor earlier(DType::Bool, {n, n});  // [i, j]: j < i
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) earlier.data[size_t(i * n + j)] = 1;
  const Value beats = g.where(c.constant_value(earlier, c.node().output(0) + ".earlier"), g.compare(b, a, not_worse),
                              g.compare(b, a, better));
  const Value place = g.sum(g.cast(beats, DType::F32), {rank});  // [.., n]: each element's rank, exact below 2^24
  // [.., k, n]: output position r takes the element whose rank is r.
  Tensor positions(DType::F32, {k, 1});
  for (int64_t r = 0; r < k; ++r) positions.data[size_t(r)] = double(r);
  const Value chosen = g.compare(g.reshape(place, with({1, n})), c.constant_value(positions, c.node().output(0) + ".ranks"),
                                 CompareMode::Eq);
  const Value values = g.sum(g.where(chosen, g.reshape(x, with({1, n})), g.scalar(0.0, in.dtype)), {rank});
  Tensor index(DType::I64, {n});
  for (int64_t i = 0; i < n; ++i) index.data[size_t(i)] = double(i);
  const Value indices =
      g.sum(g.where(chosen, c.constant_value(index, c.node().output(0) + ".positions"), g.scalar(0.0, DType::I64)), {rank});
  auto restore = [&](Value v) { return axis == rank - 1 ? v : g.permute(v, back); };
  c.set_output(0, restore(values));
  if (c.output_used(1)) c.set_output(1, restore(indices));
}

}  // namespace

void register_topk_ops(OpTable& t) { t["TopK"] = {top_k, {}}; }

}  // namespace spire::onnx_import
