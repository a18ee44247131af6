// Tensor: host storage with row-major indexing.
#include "ir/graph/tensor.h"

#include "base/half_bits.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::graph {

double round_to(DType dtype, double v) {
  switch (dtype) {
    case DType::F64: return v;
    case DType::F32: return double(float(v));
    case DType::F16: return spire::round_to_f16(v);
    case DType::BF16: return spire::round_to_bf16(v);
    case DType::I32: case DType::I64: case DType::U32: return std::trunc(v);
    case DType::Bool: return v != 0.0 ? 1.0 : 0.0;
  }
  return v;
}

Tensor::Tensor(DType dtype_, Shape shape_, double fill)
    : dtype(dtype_), shape(std::move(shape_)), data(size_t(num_elements(shape)), round_to(dtype_, fill)) {}

Tensor Tensor::from(DType dtype, Shape shape, std::vector<double> values) {
  if (int64_t(values.size()) != num_elements(shape))
    throw std::invalid_argument(fmt::format("Tensor::from: {} values for shape {} ({} elements)", values.size(),
                                            shape_to_string(shape), num_elements(shape)));
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = std::move(values);
  t.round_to_dtype();
  return t;
}

std::vector<int64_t> Tensor::strides() const {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

int64_t Tensor::offset(const std::vector<int64_t>& index) const {
  if (index.size() != shape.size())
    throw std::out_of_range(fmt::format("index of rank {} into a tensor of shape {}", index.size(),
                                        shape_to_string(shape)));
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (index[i] < 0 || index[i] >= shape[i])
      throw std::out_of_range(fmt::format("index [{}] out of range for shape {}", fmt::join(index, ","),
                                          shape_to_string(shape)));
    flat = flat * shape[i] + index[i];
  }
  return flat;
}

Tensor& Tensor::round_to_dtype() {
  for (double& v : data) v = round_to(dtype, v);
  return *this;
}

std::string Tensor::to_string(int64_t max_elements) const {
  std::string s = type().to_string() + " {";
  for (int64_t i = 0; i < numel() && i < max_elements; ++i) s += fmt::format("{}{}", i ? ", " : "", data[size_t(i)]);
  if (numel() > max_elements) s += ", ...";
  return s + "}";
}

}  // namespace spire::graph
