// A host tensor: dtype, static shape and contiguous row-major storage. What the reference evaluator
// consumes and produces, what checkpoints load into, and what device results are compared against.
//
// Storage is std::vector<double> whatever the dtype: doubles hold every f32 exactly and every integer up
// to 2^53 exactly, which is all the oracle needs. A tensor of dtype f32 holds values already rounded to
// float (round_to_dtype() does it); i32/i64/bool tensors hold whole numbers (bool: 0 or 1).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ir/graph/graph.h"

namespace spire::graph {

struct Tensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<double> data;  // num_elements(shape) values, row-major

  Tensor() = default;
  // Every element set to `fill` (rounded to the dtype).
  Tensor(DType dtype, Shape shape, double fill = 0.0);
  // From explicit row-major values (rounded to the dtype); throws std::invalid_argument on a size mismatch.
  static Tensor from(DType dtype, Shape shape, std::vector<double> values);
  static Tensor scalar(DType dtype, double value) { return Tensor(dtype, {}, value); }

  TensorType type() const { return {dtype, shape}; }
  int64_t rank() const { return int64_t(shape.size()); }
  int64_t numel() const { return int64_t(data.size()); }

  // Row-major strides in elements (the last dimension has stride 1).
  std::vector<int64_t> strides() const;
  // Flat index of a multi-index (one entry per dimension; bounds-checked, throws std::out_of_range).
  int64_t offset(const std::vector<int64_t>& index) const;

  double& operator[](int64_t flat) { return data[size_t(flat)]; }
  double operator[](int64_t flat) const { return data[size_t(flat)]; }
  double& at(const std::vector<int64_t>& index) { return data[size_t(offset(index))]; }
  double at(const std::vector<int64_t>& index) const { return data[size_t(offset(index))]; }

  // Rounds every element to what the dtype can hold (float for f32, truncation toward zero for ints,
  // 0/1 for bool). Returns *this.
  Tensor& round_to_dtype();

  // "f32[2,3] {1, 2, 3, 4, 5, 6}" (at most `max_elements` values, then "...").
  std::string to_string(int64_t max_elements = 16) const;
};

// Rounds one value to what `dtype` holds.
double round_to(DType dtype, double v);

}  // namespace spire::graph
