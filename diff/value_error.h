// How far one value computed on a device is from the same value computed by the float64 reference (or by another
// device): the statistics `spire diff` prints per value.
#pragma once

#include <cstdint>

#include "ir/graph/tensor.h"

namespace spire::diff {

struct ValueError {
  double max_abs = 0;       // max |got - want| over elements where both are finite
  double max_rel = 0;       // max |got - want| / |want| over elements where want is finite and nonzero
  double mean_abs = 0;      // mean |got - want| over the same elements as max_abs
  double ulp_at_worst = 0;  // |got - want| at the max_abs element, in units in the last place of want in the value's
                            // dtype (0 for integer and bool values, whose error is already a count)
  int64_t worst_index = -1; // flat index of the max_abs element; -1 when no element differs
  double want_max = 0;      // max |want| over finite elements: the scale a relative tolerance multiplies
  int64_t nan = 0, inf = 0; // NaN and infinite elements of `got`
  // The op table's measure (op_harness's max_norm_error): max |got - want| / max(1, max |want|), infinite for a NaN,
  // infinity or poison where the reference has a number. What the default tolerance judges.
  double norm_error = 0;
};

// `got` and `want` must have the same number of elements (the caller checks the types).
ValueError measure(const graph::Tensor& got, const graph::Tensor& want);

// The spacing of the dtype's numbers at `x` (its unit in the last place), subnormals included: 2^(e - p) with e the
// exponent of |x| (at least the dtype's smallest normal exponent) and p its mantissa bits (f16 10, bf16 7, f32 23,
// f64 52). 0 for integer and bool dtypes.
double ulp(double x, graph::DType dtype);

}  // namespace spire::diff
