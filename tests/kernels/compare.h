// Inputs and comparisons of the heavy-op tests: seeded random tensors and an element-wise check against the
// float64 reference with a documented tolerance.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph/tensor.h"

namespace spire::heavy_test {

// Uniform values in [lo, hi), rounded to the dtype; a fixed seed gives the same tensor everywhere.
graph::Tensor random_tensor(graph::DType dtype, const graph::Shape& shape, uint32_t seed, double lo = -1.0,
                            double hi = 1.0);
// Uniform integers in [lo, hi] (as values of `dtype`, which may be a float type: for ties in max pooling).
graph::Tensor random_ints(graph::DType dtype, const graph::Shape& shape, uint32_t seed, int64_t lo, int64_t hi);
// |t| element-wise.
graph::Tensor abs_of(const graph::Tensor& t);
std::map<std::string, graph::Tensor> abs_of(const std::map<std::string, graph::Tensor>& ts);

// Element i passes when |got - ref| <= atol + rtol * scale[i], where scale is `scale` when given (e.g. the
// op evaluated on |inputs|: the sum of |products| that bounds a dot product's rounding error) and |ref|
// otherwise. NaN passes only against NaN. Returns "" when every element passes, else a report: how many
// failed, the worst element, and the first few failures with their indices.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
std::string compare(const graph::Tensor& got, const graph::Tensor& ref, Tolerance tol,
                    const graph::Tensor* scale = nullptr);

}  // namespace spire::heavy_test
