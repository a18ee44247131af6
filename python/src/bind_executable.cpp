// spire.compile(graph, device) -> Executable: lowering::compile() and its set/get/step contract
// (lowering/executable.h). Inputs and outputs are streamed by default, so a step that feeds inputs and reads outputs
// is one submit and one wait; parameters are set once and stay on the device until set again. step() releases the
// GIL: other Python threads run while the device works.
#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "ir/graph/graph.h"
#include "lowering/executable.h"
#include "python/src/bindings.h"
#include "python/src/device_handle.h"
#include "python/src/numpy_tensor.h"

namespace py = pybind11;

namespace spire::python {
namespace {

class PyExecutable {
 public:
  PyExecutable(const graph::Graph& g, std::shared_ptr<rt::Device> device, const lowering::CompileOptions& options)
      : device_(std::move(device)) {
    for (const graph::Node& n : g.nodes())
      if (graph::is_leaf(n.op) && n.op != graph::OpKind::Constant) leaves_[n.name] = n.type;
    for (const auto& o : g.outputs()) outputs_[o.name] = g.type(o.value);
    for (graph::Value v : g.inputs()) inputs_.insert(g.node(v).name);
    py::gil_scoped_release release;
    exe_ = lowering::compile(g, *device_, options);
  }

  void set(const std::string& name, const py::array& array) {
    const graph::TensorType& type = leaf(name);
    if (type.dtype == graph::DType::F32 && array.dtype().is(py::dtype("float32"))) {
      check_shape(array, type.shape, name);
      auto c = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
      exe_->set_raw(name, c.data(), size_t(c.size()) * sizeof(float));
      return;
    }
    exe_->set(name, to_tensor(array, type, name));
  }

  py::array get(const std::string& name) {
    auto out = outputs_.find(name);
    if (out != outputs_.end() && out->second.dtype == graph::DType::F32) {
      py::array a = empty_array(out->second);
      exe_->get_raw(name, a.mutable_data(), size_t(a.nbytes()));
      return a;
    }
    if (out == outputs_.end() && !leaves_.contains(name))
      throw py::key_error(fmt::format("the graph has no output, input, parameter or state '{}'", name));
    return to_numpy(exe_->get(name));
  }

  // Raw float32 host memory at `address` (a CPU torch tensor's data_ptr(), contiguous): one memcpy, no numpy.
  void set_from(const std::string& name, uintptr_t address, size_t bytes) {
    require_f32(leaf(name), name, "set_from");
    py::gil_scoped_release release;
    exe_->set_raw(name, reinterpret_cast<const void*>(address), bytes);
  }

  void get_into(const std::string& name, uintptr_t address, size_t bytes) {
    auto out = outputs_.find(name);
    if (out == outputs_.end()) throw py::key_error(fmt::format("the graph has no output '{}'", name));
    require_f32(out->second, name, "get_into");
    py::gil_scoped_release release;
    exe_->get_raw(name, reinterpret_cast<void*>(address), bytes);
  }

  // Device addresses (lowering::Executable::set_device / get_device): not waited for; wait_device() waits.
  void set_device(const std::string& name, uint64_t address, size_t bytes) {
    leaf(name);
    exe_->set_device(name, address, bytes);
  }
  void get_device(const std::string& name, uint64_t address, size_t bytes) { exe_->get_device(name, address, bytes); }
  void wait_device() {
    py::gil_scoped_release release;
    device_->wait_idle();
  }

  void step() {
    StepTimer timer(step_seconds_);
    py::gil_scoped_release release;
    exe_->step();
  }
  void start_step() {
    StepTimer timer(step_seconds_);
    py::gil_scoped_release release;
    exe_->start_step();
  }
  void finish_step() {
    StepTimer timer(step_seconds_);
    py::gil_scoped_release release;
    exe_->finish_step();
  }
  // Another library's stream on the same device (rt::Device::wait_for_stream / signal_stream): ordered on the device.
  void wait_for_stream(uint64_t stream) { device_->wait_for_stream(stream); }
  void signal_stream(uint64_t stream) { device_->signal_stream(stream); }

  std::string plan_text() const { return exe_->plan_text(); }
  double last_step_ms() const { return exe_->last_step_ms(); }
  const std::shared_ptr<rt::Device>& device() const { return device_; }
  uint64_t parameter_uploads() const { return parameter_uploads_; }
  double step_seconds() const { return step_seconds_; }

 private:
  // Adds the wall time of one step call (submit, wait or both) to a total: a benchmark's host overhead per call is its
  // wall time less this and the device's time (two clock reads a step, tens of nanoseconds).
  class StepTimer {
   public:
    explicit StepTimer(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
    ~StepTimer() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

   private:
    double& total_;
    std::chrono::steady_clock::time_point start_;
  };

  // The type of an input, parameter or state (KeyError for another name); counts the parameter uploads.
  const graph::TensorType& leaf(const std::string& name) {
    auto it = leaves_.find(name);
    if (it == leaves_.end())
      throw py::key_error(fmt::format("the graph has no input, parameter or state '{}'", name));
    if (!inputs_.contains(name)) ++parameter_uploads_;
    return it->second;
  }
  static void require_f32(const graph::TensorType& type, const std::string& name, const char* what) {
    if (type.dtype != graph::DType::F32)
      throw py::type_error(fmt::format("{}('{}'): the value is {}; raw copies take float32 values only", what, name,
                                       type.to_string()));
  }

  std::shared_ptr<rt::Device> device_;  // outlives exe_: members are destroyed in reverse order
  std::unique_ptr<lowering::Executable> exe_;
  std::map<std::string, graph::TensorType> leaves_;
  std::map<std::string, graph::TensorType> outputs_;
  std::set<std::string> inputs_;  // the graph's inputs; every other leaf set counts as a parameter upload
  uint64_t parameter_uploads_ = 0;
  double step_seconds_ = 0;  // wall time spent in step(), start_step() and finish_step()
};

std::unique_ptr<PyExecutable> compile(const graph::Graph& g, const py::object& device, bool stream, bool profile,
                                      bool parameters_once, int steps_in_flight) {
  std::shared_ptr<rt::Device> dev = py::isinstance<rt::Device>(device) ? device.cast<std::shared_ptr<rt::Device>>()
                                    : device.is_none() ? open_device_checked("")
                                                       : open_device_checked(device.cast<std::string>());
  lowering::CompileOptions o;
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
      .def("wait_device", &PyExecutable::wait_device, "Waits until every copy and step enqueued on the device is done")
      .def_property_readonly("parameter_uploads", &PyExecutable::parameter_uploads,
                             "How many times a parameter or state was set (a debug counter: tests hold spire.torch to "
                             "uploading weights only when they change)")
      .def_property_readonly("step_seconds", &PyExecutable::step_seconds,
                             "Wall seconds spent in step(), start_step() and finish_step() so far (a benchmark's "
                             "counter: a call's host overhead is its wall time less this and the device's time)")
      .def("step", &PyExecutable::step, "Runs one step on the device (the GIL is released meanwhile)")
      .def("start_step", &PyExecutable::start_step,
           "Submits one step without waiting (at most steps_in_flight, a compile() argument, before finish_step())")
      .def("finish_step", &PyExecutable::finish_step, "Waits for the oldest step start_step() submitted")
      .def("wait_for_stream", &PyExecutable::wait_for_stream, py::arg("stream"),
           "CUDA: spire's work enqueued from now on waits, on the device, for what is enqueued on `stream` (a CUstream "
           "of the same device, torch.cuda.current_stream().cuda_stream); no host wait")
      .def("signal_stream", &PyExecutable::signal_stream, py::arg("stream"),
           "CUDA: work enqueued on `stream` from now on waits, on the device, for what spire enqueued so far (steps, "
           "set_device / get_device copies); no host wait")
      .def("plan_text", &PyExecutable::plan_text, "The plan: buffers, kernels, launches in order")
      .def("last_step_ms", &PyExecutable::last_step_ms, "Device time of the last step in milliseconds")
      .def_property_readonly("device", &PyExecutable::device);
  m.def("compile", &compile, py::arg("graph"), py::arg("device") = py::none(), py::arg("stream") = true,
        py::arg("profile") = false, py::arg("parameters_once") = true, py::arg("steps_in_flight") = 1,
        "Compiles a graph for a device (a spire.Device, a name such as 'vulkan:0', or None for the best present). "
        "stream: every input and output goes through host-visible copies inside the step (one submit per step). "
        "steps_in_flight: how many start_step() calls may precede a finish_step() (1 to 4).");
}

}  // namespace spire::python
