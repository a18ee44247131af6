#include "python/src/numpy_tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace py = pybind11;

namespace spire::python {
namespace {

std::string shape_of(const py::array& a) {
  std::vector<int64_t> s(a.shape(), a.shape() + a.ndim());
  return graph::shape_to_string(s);
}

template <typename T>
void copy_in(const py::array& array, std::vector<double>& out) {
  auto c = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(array);
  const T* p = c.data();
  for (size_t i = 0; i < out.size(); ++i) out[i] = double(p[i]);
}

template <typename T>
void copy_out(const std::vector<double>& in, py::array& array) {
  T* p = static_cast<T*>(array.mutable_data());
  for (size_t i = 0; i < in.size(); ++i) p[i] = T(in[i]);
}

}  // namespace

py::dtype numpy_dtype(graph::DType dtype) {
  switch (dtype) {
    case graph::DType::Bool: return py::dtype("bool");
    case graph::DType::I32: return py::dtype("int32");
    case graph::DType::U32: return py::dtype("uint32");
    case graph::DType::I64: return py::dtype("int64");
    case graph::DType::F16: return py::dtype("float16");
    case graph::DType::F64: return py::dtype("float64");
    case graph::DType::F32:
    case graph::DType::BF16: return py::dtype("float32");
  }
  throw std::logic_error("unknown dtype");
}

graph::DType spire_dtype(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  if (kind == 'b') return graph::DType::Bool;
  if (kind == 'i' && size == 4) return graph::DType::I32;
  if (kind == 'i' && size == 8) return graph::DType::I64;
  if (kind == 'f' && size == 2) return graph::DType::F16;
  if (kind == 'f' && size == 4) return graph::DType::F32;
  if (kind == 'f' && size == 8) return graph::DType::F64;
  throw py::type_error(fmt::format("spire has no dtype for numpy's {}; it has bool, int32, int64, float16, "
                                   "bfloat16 (as float32), float32 and float64",
                                   std::string(py::str(py::object(dtype)))));
}

void check_shape(const py::array& array, const graph::Shape& shape, const std::string& name) {
  std::vector<int64_t> s(array.shape(), array.shape() + array.ndim());
  if (s != shape)
    throw py::value_error(fmt::format("'{}' is {} in the graph, but the array given is {}", name,
                                      graph::shape_to_string(shape), shape_of(array)));
}

graph::Tensor to_tensor(const py::array& array, const graph::TensorType& type, const std::string& name) {
  check_shape(array, type.shape, name);
  const py::dtype expected = numpy_dtype(type.dtype);
  if (!array.dtype().is(expected) && spire_dtype(array.dtype()) != spire_dtype(expected))
    throw py::type_error(fmt::format("'{}' is {} in the graph: pass numpy {}, not {}", name, type.to_string(),
                                     std::string(py::str(py::object(expected))),
                                     std::string(py::str(py::object(array.dtype())))));
  graph::Tensor t(type.dtype, type.shape);
  switch (spire_dtype(expected)) {
    case graph::DType::Bool: copy_in<bool>(array, t.data); break;
    case graph::DType::I32: copy_in<int32_t>(array, t.data); break;
    case graph::DType::U32: copy_in<uint32_t>(array, t.data); break;
    case graph::DType::I64: copy_in<int64_t>(array, t.data); break;
    case graph::DType::F32: copy_in<float>(array, t.data); break;
    case graph::DType::F64: copy_in<double>(array, t.data); break;
    case graph::DType::F16: {
      // numpy's float16 widened by numpy itself (no half type in C++20).
      py::array wide = array.attr("astype")("float64");
      copy_in<double>(wide, t.data);
      break;
    }
    case graph::DType::BF16: break;
  }
  t.round_to_dtype();
  return t;
}

py::array empty_array(const graph::TensorType& type) {
  return py::array(numpy_dtype(type.dtype), std::vector<py::ssize_t>(type.shape.begin(), type.shape.end()));
}

py::array to_numpy(const graph::Tensor& t) {
  if (t.dtype == graph::DType::F16) {
    py::array wide(py::dtype("float64"), std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
    copy_out<double>(t.data, wide);
    return wide.attr("astype")("float16");
  }
  py::array a = empty_array(t.type());
  switch (t.dtype) {
    case graph::DType::Bool: copy_out<bool>(t.data, a); break;
    case graph::DType::I32: copy_out<int32_t>(t.data, a); break;
    case graph::DType::U32: copy_out<uint32_t>(t.data, a); break;
    case graph::DType::I64: copy_out<int64_t>(t.data, a); break;
    case graph::DType::F64: copy_out<double>(t.data, a); break;
    case graph::DType::F32:
    case graph::DType::BF16: copy_out<float>(t.data, a); break;
    case graph::DType::F16: break;
  }
  return a;
}

}  // namespace spire::python
