// How far a device result may be from the float64 reference, per op, with the reason. One table
// (op_tolerances.cpp) used by the op harness, its tests and `spire test-ops`.
//
// The error measured is a max-norm relative error of a whole tensor, with magnitudes below 1 judged absolutely:
//     max_i |device_i - reference_i| / max(1, max_i |reference_i|)
// Scaling by the tensor's largest value, not each element's, keeps cancellation (a gradient summed from
// hundreds of random-sign terms landing near zero; 1 - tanh^2 near the tails) from turning an ordinary
// float32 rounding into a failure, while a wrong element of ordinary size still shows as an O(1) error. The
// floor of 1 is numpy's allclose with atol = rtol; test inputs are drawn of order 1, so results of order 1
// are the common case. A NaN or poison value where the reference has a number is an infinite error. Integer
// and bool results must match exactly.
#pragma once

#include <string_view>

#include "ir/graph/graph.h"

namespace spire::lowering {

struct Tolerance {
  double f32 = 0;   // results computed in float32
  double f64 = 0;   // results computed in float64
  std::string_view why;
};

// The tolerance of `op`'s forward result (backward = false) or of the gradients its backward graph produces
// (backward = true; the VJP runs several ops: the bound covers the chain).
const Tolerance& op_tolerance(graph::OpKind op, bool backward);

// The number for a result of dtype `dtype` (0 for integer and bool results).
double tolerance_for(graph::OpKind op, bool backward, graph::DType dtype);

}  // namespace spire::lowering
