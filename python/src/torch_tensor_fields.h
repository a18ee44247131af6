// What the extension reads of a torch.Tensor, which it cannot include or link (spire builds without torch): each field
// through Python's C API by an interned name, so a read is one attribute lookup in the type's cache and one C call
// into torch, without Python bytecode. A failed read is a Python exception (pybind11::error_already_set).
#pragma once

#include <cstdint>

#include <pybind11/pybind11.h>

namespace spire::python::torch_tensor {

int64_t version(PyObject* t);     // t._version: bumped by every in-place change
uint64_t data_ptr(PyObject* t);   // t.data_ptr(): the memory's address, new when .data or .set_() replaced it
bool is_contiguous(PyObject* t);  // t.is_contiguous()
pybind11::object dtype(PyObject* t);
pybind11::object shape(PyObject* t);   // a torch.Size
pybind11::object device(PyObject* t);  // a torch.device

// Whether a and b are equal by Python's ==; identical objects without a call.
bool equal(PyObject* a, PyObject* b);

}  // namespace spire::python::torch_tensor
