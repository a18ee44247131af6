// Linear algebra beyond MatMul: Det of small matrices by its closed forms (1x1, 2x2, 3x3 by cofactors along the first
// row), products and differences of elements, exact to rounding. Larger matrices need pivoted elimination, whose
// row choices depend on the values: refused by size.
#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

void det(NodeContext& c) {
  auto& g = c.g();
  const graph::TensorType x = c.type(0);
  if (!graph::is_float(x.dtype)) c.refuse("spire runs Det on float tensors only");
  if (x.rank() < 2 || x.shape[x.shape.size() - 1] != x.shape[x.shape.size() - 2])
    c.refuse(fmt::format("Det of {}: the last two axes must be square", graph::shape_to_string(x.shape)));
  const int64_t n = x.shape.back();
  if (n < 1 || n > 3) c.refuse(fmt::format("Det of {}x{} matrices (spire has the closed forms to 3x3)", n, n));
  const Shape batch(x.shape.begin(), x.shape.end() - 2);
  const int64_t rank = x.rank();
  // a(i, j): element (i, j) of every matrix, shaped like the batch.
  auto a = [&](int64_t i, int64_t j) {
    std::vector<int64_t> starts(size_t(rank), 0);
    starts[size_t(rank - 2)] = i;
    starts[size_t(rank - 1)] = j;
    Shape one = batch;
    one.insert(one.end(), {1, 1});
    return g.reshape(g.op("slice", {c.value(0)}, {{"starts", starts}, {"steps", std::vector<int64_t>(size_t(rank), 1)},
                                                  {"shape", one}}),
                     batch);
  };
  auto minor2 = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    return g.sub(g.mul(a(r0, c0), a(r1, c1)), g.mul(a(r0, c1), a(r1, c0)));
  };
  Value d;
  if (n == 1) {
    d = a(0, 0);
  } else if (n == 2) {
    d = minor2(0, 1, 0, 1);
  } else {
    d = g.add(g.sub(g.mul(a(0, 0), minor2(1, 2, 1, 2)), g.mul(a(0, 1), minor2(1, 2, 0, 2))),
              g.mul(a(0, 2), minor2(1, 2, 0, 1)));
  }
  c.set_output(0, d);
}

}  // namespace

void register_linalg_ops(OpTable& t) { t["Det"] = {det, {}}; }

}  // namespace spire::onnx_import
