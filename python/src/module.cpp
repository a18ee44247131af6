// spire._spire: the compiler and runtime called directly from Python (no CLI, no files). Errors keep their meaning:
// graph errors (a shape that does not fit, an unknown name) become spire.GraphError (a ValueError), runtime errors
// (a driver failure, a missing feature) spire.DeviceError (a RuntimeError).
#include <pybind11/pybind11.h>

#include "ir/graph/graph.h"
#include "python/src/bindings.h"
#include "runtime/device.h"

namespace py = pybind11;

PYBIND11_MODULE(_spire, m) {
  m.doc() = "spire's compiler and runtime: devices, graphs, compiled executables";
  static py::exception<spire::graph::GraphError> graph_error(m, "GraphError", PyExc_ValueError);
  static py::exception<spire::rt::Error> runtime_error(m, "DeviceError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const spire::graph::GraphError& e) {
      graph_error(e.what());
    } catch (const spire::rt::Error& e) {
      runtime_error(e.what());
    }
  });
  spire::python::bind_devices(m);
  spire::python::bind_graph(m);
  spire::python::bind_executable(m);
  spire::python::bind_custom_ops(m);
  spire::python::bind_segment_call(m);
}
