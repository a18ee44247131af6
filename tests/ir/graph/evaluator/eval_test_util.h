// Helpers shared by the evaluator tests: tensors from literals, seeded random tensors, inner products, and
// one-call evaluation of a graph's output.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/graph/evaluator.h"
#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::graph::test {

inline Tensor f64(Shape shape, std::vector<double> values) { return Tensor::from(DType::F64, std::move(shape), std::move(values)); }

// Uniform values in [lo, hi) from a fixed seed.
inline Tensor random_tensor(DType dtype, Shape shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(dtype, std::move(shape));
  for (double& v : t.data) v = dist(rng);
  return t.round_to_dtype();
}

inline double dot(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.data.size(), b.data.size());
  double s = 0;
  for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) s += a.data[i] * b.data[i];
  return s;
}

// Evaluates g and returns its output `name`.
inline Tensor eval_output(const Graph& g, const std::map<std::string, Tensor>& feeds, const std::string& name = "y",
                          DType compute = DType::F64) {
  std::map<std::string, Tensor> results = evaluate(g, feeds, compute);
  auto it = results.find(name);
  if (it == results.end()) {
    ADD_FAILURE() << "evaluate() returned no output named '" << name << "'";
    return {};
  }
  return it->second;
}

// Every element of `got` within `tol` (absolute) of `want`, and the shape as expected.
inline void expect_values(const Tensor& got, const Shape& shape, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.shape, shape) << got.to_string();
  ASSERT_EQ(got.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got.data[i])) << "element " << i << " of " << got.to_string();
    else if (std::isinf(want[i]))
      EXPECT_EQ(got.data[i], want[i]) << "element " << i << " of " << got.to_string();
    else
      EXPECT_NEAR(got.data[i], want[i], tol) << "element " << i << " of " << got.to_string();
  }
}

}  // namespace spire::graph::test
