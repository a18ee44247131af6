#include "python/src/py_executable.h"

#include <chrono>

#include <fmt/format.h>

#include "python/src/numpy_tensor.h"

namespace py = pybind11;

namespace spire::python {
namespace {

// Adds the wall time of one step call (submit, wait or both) to a total: a benchmark's host overhead per call is its
// wall time less this and the device's time (two clock reads a step, tens of nanoseconds).
class StepTimer {
 public:
  explicit StepTimer(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~StepTimer() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

void require_f32(const graph::TensorType& type, const std::string& name, const char* what) {
  if (type.dtype != graph::DType::F32)
    throw py::type_error(fmt::format("{}('{}'): the value is {}; raw copies take float32 values only", what, name,
                                     type.to_string()));
}

}  // namespace

PyExecutable::PyExecutable(const graph::Graph& g, std::shared_ptr<rt::Device> device,
                           const lowering::CompileOptions& options)
    : device_(std::move(device)), steps_in_flight_(options.steps_in_flight) {
  for (const graph::Node& n : g.nodes())
    if (graph::is_leaf(n.op) && n.op != graph::OpKind::Constant) leaves_[n.name] = n.type;
  for (const auto& o : g.outputs()) outputs_[o.name] = g.type(o.value);
  for (graph::Value v : g.inputs()) inputs_.insert(g.node(v).name);
  py::gil_scoped_release release;
  exe_ = lowering::compile(g, *device_, options);
}

void PyExecutable::set(const std::string& name, const py::array& array) {
  const graph::TensorType& type = leaf(name);
  if (type.dtype == graph::DType::F32 && array.dtype().is(py::dtype("float32")) && stores_f32(name)) {
    check_shape(array, type.shape, name);
    auto c = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
    exe_->set_raw(name, c.data(), size_t(c.size()) * sizeof(float));
    return;
  }
  exe_->set(name, to_tensor(array, type, name));
}

py::array PyExecutable::get(const std::string& name) {
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

bool PyExecutable::stores_f32(const std::string& name) const {
  const auto leaf_type = leaves_.find(name);
  const auto output_type = outputs_.find(name);
  const graph::TensorType* type = leaf_type != leaves_.end() ? &leaf_type->second
                                  : output_type != outputs_.end() ? &output_type->second : nullptr;
  return type && type->dtype == graph::DType::F32 && exe_->value_bytes(name) == uint64_t(type->numel()) * 4;
}

void PyExecutable::set_from(const std::string& name, uintptr_t address, size_t bytes) {
  require_f32(leaf(name), name, "set_from");
  py::gil_scoped_release release;
  exe_->set_raw(name, reinterpret_cast<const void*>(address), bytes);
}

void PyExecutable::get_into(const std::string& name, uintptr_t address, size_t bytes) {
  auto out = outputs_.find(name);
  if (out == outputs_.end()) throw py::key_error(fmt::format("the graph has no output '{}'", name));
  require_f32(out->second, name, "get_into");
  py::gil_scoped_release release;
  exe_->get_raw(name, reinterpret_cast<void*>(address), bytes);
}

void PyExecutable::set_device(const std::string& name, uint64_t address, size_t bytes) {
  leaf(name);
  exe_->set_device(name, address, bytes);
}

void PyExecutable::get_device(const std::string& name, uint64_t address, size_t bytes) {
  exe_->get_device(name, address, bytes);
}

void PyExecutable::wait_device() {
  py::gil_scoped_release release;
  device_->wait_idle();
}

template <class Call>
void PyExecutable::timed_step(Call call) {
  if (skip_steps) return;
  StepTimer timer(step_seconds_);
  py::gil_scoped_release release;
  call(*exe_);
}

void PyExecutable::step() { timed_step([](auto& exe) { exe.step(); }); }
void PyExecutable::start_step() { timed_step([](auto& exe) { exe.start_step(); }); }
void PyExecutable::finish_step() { timed_step([](auto& exe) { exe.finish_step(); }); }

void PyExecutable::submit() {
  if (in_flight_ == steps_in_flight_) {
    --in_flight_;  // counted out first: a wait that throws leaves no step counted twice
    finish_step();
  }
  start_step();
  ++in_flight_;
}

void PyExecutable::settle() {
  while (in_flight_ > 0) {
    --in_flight_;
    finish_step();
  }
}

const graph::TensorType& PyExecutable::leaf(const std::string& name) {
  auto it = leaves_.find(name);
  if (it == leaves_.end()) throw py::key_error(fmt::format("the graph has no input, parameter or state '{}'", name));
  if (!inputs_.contains(name)) ++parameter_uploads_;
  return it->second;
}

}  // namespace spire::python
