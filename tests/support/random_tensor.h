// Inputs for tests that compare two graphs (or a graph and a device) on the float64 evaluator: a tensor of
// uniform(-1, 1) values from a fixed seed, rounded to f32 for an f32 tensor (so a device reads exactly the values the
// evaluator computes with).
#pragma once

#include <cstdint>
#include <random>

#include "ir/graph/tensor.h"

namespace spire::testing_support {

inline graph::Tensor uniform_tensor(const graph::Shape& shape, uint32_t seed, graph::DType dtype = graph::DType::F64) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  graph::Tensor t(dtype, shape, 0);
  for (double& x : t.data) x = dtype == graph::DType::F32 ? double(float(u(rng))) : u(rng);
  return t;
}

// Whole numbers in [lo, hi] (f32) from a fixed seed: convolved with whole-number weights they tie inside pooling
// windows, and a ReLU zeroes whole windows.
inline graph::Tensor integer_tensor(const graph::Shape& shape, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  graph::Tensor t(graph::DType::F32, shape, 0);
  for (double& x : t.data) x = u(rng);
  return t;
}

}  // namespace spire::testing_support
