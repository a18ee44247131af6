// The reference evaluator's walk for every pointwise op: the inputs are broadcast (numpy rules) to the
// result's shape and the op's scalar reference (its op table entry) computes each element in double.
#include "ir/graph/eval_ops.h"
#include "ir/graph/op_table.h"

namespace spire::graph::eval {

namespace {

template <size_t K>
Tensor walk(const Node& n, Inputs in, ScalarReference f) {
  Tensor out = result_of(n);
  std::array<std::vector<int64_t>, K> strides;
  std::array<const std::vector<int64_t>*, K> stride_ptrs;
  std::array<const double*, K> data;
  for (size_t k = 0; k < K; ++k) {
    strides[k] = broadcast_strides(in[k]->shape, out.shape);
    stride_ptrs[k] = &strides[k];
    data[k] = in[k]->data.data();
  }
  double* po = out.data.data();
  for_each_index<K>(out.shape, stride_ptrs, [&](int64_t i, const std::array<int64_t, K>& off) {
    std::array<double, K> x;
    for (size_t k = 0; k < K; ++k) x[k] = data[k][off[k]];
    po[i] = f(n, x);
  });
  return out;
}

}  // namespace

Tensor pointwise(const Node& n, Inputs in) {
  ScalarReference f = op_info(n.op).scalar;
  switch (in.size()) {
    case 1: return walk<1>(n, in, f);
    case 2: return walk<2>(n, in, f);
    case 3: return walk<3>(n, in, f);
    case 4: return walk<4>(n, in, f);
  }
  fail(n, "pointwise ops take 1 to 4 inputs");
}

}  // namespace spire::graph::eval
