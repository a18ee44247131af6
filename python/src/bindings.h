// The pieces of the `spire._spire` extension module, one file each; module.cpp calls them in order.
#pragma once

#include <pybind11/pybind11.h>

namespace spire::python {

void bind_devices(pybind11::module_& m);     // devices(), Device
void bind_graph(pybind11::module_& m);       // Graph: builder, text form, autograd, reference evaluator
void bind_executable(pybind11::module_& m);  // compile() -> Executable with set/get/step
void bind_custom_ops(pybind11::module_& m);  // custom_op(), load_ops(): user ops with GLSL kernels
void bind_segment_call(pybind11::module_& m);  // SegmentCall: spire.torch's per-call hot path

}  // namespace spire::python
