// The float64 product the tensor-core matmul tests compare with, and the magnitude that bounds each element's error.
#pragma once

#include <cstdint>

#include "ir/graph/tensor.h"

namespace spire::heavy_test {

struct ReferenceProduct {
  graph::Tensor product;    // f64 [batch, m, n]
  graph::Tensor magnitude;  // f64 [batch, m, n]: sum over k of |a_ik b_kj|
};

// a is [batch, m, k] (or [k, m] when a_transposed), b [batch, k, n] (or [n, k] when b_transposed); the transposed
// operands are rank 2, shared by every batch, as is b when b_shared ([k, n]).
ReferenceProduct reference_product(const graph::Tensor& a, const graph::Tensor& b, int64_t batch, int64_t m, int64_t k,
                                   int64_t n, bool a_transposed, bool b_transposed, bool b_shared = false);

}  // namespace spire::heavy_test
