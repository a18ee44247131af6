// spire.Executable: a lowering::Executable as Python sees it (names checked with KeyError/TypeError, the GIL released
// while the device works), with the counters spire.torch's tests and benchmarks read. Shared by bind_executable.cpp,
// which binds it, and segment_call.cpp, which drives it from C++ on spire.torch's hot path.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <pybind11/numpy.h>

#include "ir/graph/graph.h"
#include "lowering/executable.h"
#include "runtime/device.h"

namespace spire::python {

class PyExecutable {
 public:
  PyExecutable(const graph::Graph& g, std::shared_ptr<rt::Device> device, const lowering::CompileOptions& options);

  void set(const std::string& name, const pybind11::array& array);
  pybind11::array get(const std::string& name);
  // Raw float32 host memory at `address` (a CPU torch tensor's data_ptr(), contiguous): one memcpy, no numpy.
  void set_from(const std::string& name, uintptr_t address, size_t bytes);
  void get_into(const std::string& name, uintptr_t address, size_t bytes);
  // Whether value `name` is float32 on the device too, so set_from / set_device / get_into / get_device take its
  // bytes raw: false for other dtypes and for an f32 parameter the bf16/f16 policies store in half (set() rounds it).
  bool stores_f32(const std::string& name) const;
  // Device addresses (lowering::Executable::set_device / get_device): not waited for; wait_device() waits.
  void set_device(const std::string& name, uint64_t address, size_t bytes);
  void get_device(const std::string& name, uint64_t address, size_t bytes);
  void wait_device();

  void step();
  void start_step();
  void finish_step();
  // Steps kept in flight (at most the compile option steps_in_flight): submit() starts one, first waiting for the
  // oldest when that many are in flight; settle() waits for all of them, before anything that goes through the host.
  void submit();
  void settle();
  int in_flight() const { return in_flight_; }

  // Another library's stream on the same device (rt::Device::wait_for_stream / signal_stream): ordered on the device.
  void wait_for_stream(uint64_t stream) { device_->wait_for_stream(stream); }
  void signal_stream(uint64_t stream) { device_->signal_stream(stream); }

  std::string plan_text() const { return exe_->plan_text(); }
  double last_step_ms() const { return exe_->last_step_ms(); }
  std::string precision_note() const { return exe_->precision_note(); }
  const std::shared_ptr<rt::Device>& device() const { return device_; }
  uint64_t parameter_uploads() const { return parameter_uploads_; }
  double step_seconds() const { return step_seconds_; }
  // A benchmark's switch: step(), start_step() and finish_step() return at once, so that a call's host work is timed
  // without the device's (on lavapipe a step is milliseconds to seconds of CPU time). Results are stale meanwhile.
  bool skip_steps = false;

 private:
  // The type of an input, parameter or state (KeyError for another name); counts the parameter uploads.
  const graph::TensorType& leaf(const std::string& name);
  // One of the executable's step calls, timed into step_seconds_ and run without the GIL; nothing under skip_steps.
  template <class Call>
  void timed_step(Call call);

  std::shared_ptr<rt::Device> device_;  // outlives exe_: members are destroyed in reverse order
  std::unique_ptr<lowering::Executable> exe_;
  std::map<std::string, graph::TensorType> leaves_;
  std::map<std::string, graph::TensorType> outputs_;
  std::set<std::string> inputs_;  // the graph's inputs; every other leaf set counts as a parameter upload
  uint64_t parameter_uploads_ = 0;
  double step_seconds_ = 0;  // wall time spent in step(), start_step() and finish_step()
  int steps_in_flight_ = 1;  // the compile option: how many start_step() calls may precede a finish_step()
  int in_flight_ = 0;        // steps submit() started that settle() or a later submit() has not waited for
};

}  // namespace spire::python
