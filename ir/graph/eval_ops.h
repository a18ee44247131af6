// Internal to the reference evaluator: the references of the ops whose entries are defined with shared rules
// (eval_*.cpp) and the helpers every reference uses, also the ones an op family file of ir/graph/ops/ defines
// beside its op. Not part of the public API (that is evaluator.h).
//
// Every op function receives the node (its attributes and its result type) and its input tensors, and
// returns a tensor of exactly the node's dtype and shape whose values are computed in double. evaluate()
// then rounds them to the compute precision (float for F32) and, for integer and bool results, to the dtype.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::graph::eval {

using Inputs = std::span<const Tensor* const>;

// "max_pool2d 'pool1'": names a node in error messages.
std::string describe(const Node& n);

// Throws GraphError "<op> '<node>': <message>".
[[noreturn]] void fail(const Node& n, const std::string& message);

// Row-major strides (in elements) of a shape.
std::vector<int64_t> row_major_strides(const Shape& s);

// The strides with which an input of shape `in` is read when it is broadcast (numpy rules, aligned from the
// right) to `out`: one entry per dimension of `out`, 0 where the input has no such dimension or has 1.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Calls f(flat, offsets) for every element of a row-major tensor of shape `out`, in order, where `flat` is
// the element's flat index and offsets[k] = sum over dims d of index[d] * strides[k][d]. The strides need not
// be contiguous (broadcasting, permutations, reductions all reduce to this one walk). Templated so the
// per-element call inlines: no allocation or indirect call per element.
template <size_t K, class F>
void for_each_index(const Shape& out, const std::array<const std::vector<int64_t>*, K>& strides, F&& f) {
  const int64_t total = num_elements(out);
  if (total == 0) return;
  const size_t rank = out.size();
  std::array<int64_t, K> base{};
  if (rank == 0) {
    f(int64_t(0), base);
    return;
  }
  std::array<int64_t, K> inner_stride{};
  for (size_t k = 0; k < K; ++k) inner_stride[k] = (*strides[k])[rank - 1];
  const int64_t inner = out[rank - 1];
  std::vector<int64_t> index(rank, 0);
  for (int64_t flat = 0; flat < total; flat += inner) {
    std::array<int64_t, K> off = base;
    for (int64_t i = 0; i < inner; ++i) {
      f(flat + i, off);
      for (size_t k = 0; k < K; ++k) off[k] += inner_stride[k];
    }
    // Odometer carry over the outer dimensions.
    for (size_t d = rank - 1; d-- > 0;) {
      ++index[d];
      for (size_t k = 0; k < K; ++k) base[k] += (*strides[k])[d];
      if (index[d] < out[d]) break;
      for (size_t k = 0; k < K; ++k) base[k] -= (*strides[k])[d] * out[d];
      index[d] = 0;
    }
  }
}

// An empty result of the node's type (values all zero), to be filled in.
Tensor result_of(const Node& n);

// ---- eval_pointwise.cpp
// Any pointwise op, through its op table entry's scalar reference.
Tensor pointwise(const Node& n, Inputs in);

// ---- eval_reduce.cpp
Tensor reduce(const Node& n, Inputs in);     // sum mean max
Tensor sum_to(const Node& n, Inputs in);
// A row of `length` values spaced `stride` apart: its maximum (NaN if any is NaN) and the log of the sum of
// exp(v - max). Subtracting the maximum before exponentiating (as PyTorch does) keeps large values from
// overflowing and small terms from being lost; the ops that normalize a row of logits build on it.
struct RowLogSumExp {
  double max;
  double log_sum;
};
RowLogSumExp row_log_sum_exp(const double* row, int64_t length, int64_t stride);

// ---- eval_shape.cpp
Tensor reshape(const Node& n, Inputs in);    // reshape flatten
Tensor permute(const Node& n, Inputs in);
Tensor broadcast_to(const Node& n, Inputs in);

}  // namespace spire::graph::eval
