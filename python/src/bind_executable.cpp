// spire.compile(graph, device) -> Executable: lowering::compile() and its set/get/step contract
// (lowering/executable.h). Inputs and outputs are streamed by default, so a step that feeds inputs and reads outputs
// is one submit and one wait; parameters are set once and stay on the device until set again. step() releases the
// GIL: other Python threads run while the device works.
#include <pybind11/stl.h>

#include "ir/graph/graph.h"
#include "lowering/executable.h"
#include "python/src/bindings.h"
#include "python/src/device_handle.h"
#include "python/src/py_executable.h"

namespace py = pybind11;

namespace spire::python {
namespace {

// A policy by its name ("f32" is fp32); a ValueError naming the choices for another.
Precision checked_precision(const std::string& name) {
  try {
    return parse_precision(name);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
}

std::unique_ptr<PyExecutable> compile(const graph::Graph& g, const py::object& device, bool stream, bool profile,
                                      bool parameters_once, int steps_in_flight, const std::string& precision) {
  std::shared_ptr<rt::Device> dev = py::isinstance<rt::Device>(device) ? device.cast<std::shared_ptr<rt::Device>>()
                                    : device.is_none() ? open_device_checked("")
                                                       : open_device_checked(device.cast<std::string>());
  lowering::CompileOptions o;
  o.precision = checked_precision(precision);
  o.profile = profile;
  o.parameters_once = parameters_once;
  o.steps_in_flight = steps_in_flight;
  if (stream) {
    for (graph::Value v : g.inputs()) o.streamed_inputs.push_back(g.node(v).name);
    for (const auto& out : g.outputs()) o.streamed_outputs.push_back(out.name);
  }
  return std::make_unique<PyExecutable>(g, dev, o);
}

}  // namespace

void bind_executable(py::module_& m) {
  py::class_<PyExecutable>(m, "Executable", "A graph compiled for a device: set() inputs and parameters, step(), get()")
      .def("set", &PyExecutable::set, py::arg("name"), py::arg("array"),
           "Uploads an input, parameter or state (a numpy array of the value's shape and dtype; bf16 as float32)")
      .def("get", &PyExecutable::get, py::arg("name"), "Downloads an output (by output name), parameter or state")
      .def("set_from", &PyExecutable::set_from, py::arg("name"), py::arg("address"), py::arg("bytes"),
           "Sets a float32 value from host memory at an address (a contiguous CPU tensor's data_ptr()), one memcpy")
      .def("get_into", &PyExecutable::get_into, py::arg("name"), py::arg("address"), py::arg("bytes"),
           "Reads a float32 output into host memory at an address (a contiguous CPU tensor's data_ptr())")
      .def("set_device", &PyExecutable::set_device, py::arg("name"), py::arg("address"), py::arg("bytes"),
           "Copies a value in from a device address (CUDA: a torch CUDA tensor's data_ptr() on the same device), "
           "device to device, not waited for; the tensor's writes must be complete (synchronize torch's stream)")
      .def("get_device", &PyExecutable::get_device, py::arg("name"), py::arg("address"), py::arg("bytes"),
           "Copies an output, parameter or state to a device address after the last step, not waited for")
      .def("stores_f32", &PyExecutable::stores_f32, py::arg("name"),
           "Whether a value is float32 on the device too, so set_from / set_device / get_into / get_device take its "
           "bytes raw; False for other dtypes and for a float32 weight the bf16/f16 policies store in half (set() "
           "rounds it on upload)")
      .def("wait_device", &PyExecutable::wait_device, "Waits until every copy and step enqueued on the device is done")
      .def_property_readonly("parameter_uploads", &PyExecutable::parameter_uploads,
                             "How many times a parameter or state was set (a debug counter: tests hold spire.torch to "
                             "uploading weights only when they change)")
      .def_property_readonly("step_seconds", &PyExecutable::step_seconds,
                             "Wall seconds spent in step(), start_step() and finish_step() so far (a benchmark's "
                             "counter: a call's host overhead is its wall time less this and the device's time)")
      .def_readwrite("skip_steps", &PyExecutable::skip_steps,
                     "A benchmark's switch: True makes step(), start_step() and finish_step() return at once, so a "
                     "call's host work is timed without the device's (results are stale meanwhile)")
      .def("step", &PyExecutable::step, "Runs one step on the device (the GIL is released meanwhile)")
      .def("start_step", &PyExecutable::start_step,
           "Submits one step without waiting (at most steps_in_flight, a compile() argument, before finish_step())")
      .def("finish_step", &PyExecutable::finish_step, "Waits for the oldest step start_step() submitted")
      .def("submit", &PyExecutable::submit,
           "Starts a step without waiting, first waiting for the oldest step in flight when steps_in_flight are")
      .def("settle", &PyExecutable::settle,
           "Waits for every step submit() started (before set(), get() or last_step_ms() read through the host)")
      .def_property_readonly("in_flight", &PyExecutable::in_flight, "Steps submit() started and not yet waited for")
      .def("wait_for_stream", &PyExecutable::wait_for_stream, py::arg("stream"),
           "CUDA: spire's work enqueued from now on waits, on the device, for what is enqueued on `stream` (a CUstream "
           "of the same device, torch.cuda.current_stream().cuda_stream); no host wait")
      .def("signal_stream", &PyExecutable::signal_stream, py::arg("stream"),
           "CUDA: work enqueued on `stream` from now on waits, on the device, for what spire enqueued so far (steps, "
           "set_device / get_device copies); no host wait")
      .def("plan_text", &PyExecutable::plan_text, "The plan: buffers, kernels, launches in order")
      .def("last_step_ms", &PyExecutable::last_step_ms, "Device time of the last step in milliseconds")
      .def_property_readonly("precision_note", &PyExecutable::precision_note,
                             "What the device runs in place of the precision asked for where it cannot honour it "
                             "(e.g. no bf16 storage: fp32), else ''")
      .def_property_readonly("device", &PyExecutable::device);
  m.def("precision", [](const std::string& name) { return std::string(precision_name(checked_precision(name))); },
        py::arg("name"),
        "The precision policy's canonical name ('fp32', 'tf32', 'bf16', 'f16'; 'f32' is 'fp32'), or a ValueError that "
        "lists them");
  static const std::string compile_doc =
      "Compiles a graph for a device (a spire.Device, a name such as 'vulkan:0', or None for the best present). "
      "stream: every input and output goes through host-visible copies inside the step (one submit per step). "
      "steps_in_flight: how many start_step() calls may precede a finish_step() (1 to 4). "
      "precision: the policy, 'fp32', 'tf32', 'bf16' or 'f16' (another name is a ValueError listing these): " +
      std::string(precision_policies_help());
  m.def("compile", &compile, py::arg("graph"), py::arg("device") = py::none(), py::arg("stream") = true,
        py::arg("profile") = false, py::arg("parameters_once") = true, py::arg("steps_in_flight") = 1,
        py::arg("precision") = "fp32", compile_doc.c_str());
}

}  // namespace spire::python
