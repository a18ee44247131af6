// numpy arrays <-> graph::Tensor. numpy has no bfloat16: a bf16 value travels as float32 (rounded to bf16 on the way
// in). Every other dtype maps one to one: bool, int32, int64, float16, float32, float64.
#pragma once

#include <pybind11/numpy.h>

#include "ir/graph/tensor.h"

namespace spire::python {

// The numpy dtype a value of `dtype` is exchanged as.
pybind11::dtype numpy_dtype(graph::DType dtype);
// The spire dtype of a numpy dtype; throws TypeError naming it and the dtypes spire has.
graph::DType spire_dtype(const pybind11::dtype& dtype);
// `array` as a tensor of `type`, checking its shape and that its dtype is what the value is exchanged as (TypeError /
// ValueError naming `name` and both).
graph::Tensor to_tensor(const pybind11::array& array, const graph::TensorType& type, const std::string& name);
pybind11::array to_numpy(const graph::Tensor& t);
// A contiguous numpy array of `type`'s shape and exchange dtype, uninitialized.
pybind11::array empty_array(const graph::TensorType& type);
// Throws ValueError naming `name` when the array's shape is not `shape`.
void check_shape(const pybind11::array& array, const graph::Shape& shape, const std::string& name);

}  // namespace spire::python
