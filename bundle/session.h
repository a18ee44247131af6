// Runs a bundle on a device: the runtime half of ahead-of-time compilation, and what the C API (capi/) wraps.
//
// A Session picks the bundle's plans for the device's binary format, uploads the weights once (shared by every
// batch's plan), and instantiates a plan (its buffers, kernels and one recorded command stream) the first time a
// run needs its batch; the weights go up on a second thread while that plan's kernels load, and the start-up profile
// (runtime/startup_profile.h) records how long each took. Inputs are set from host memory in the tensor's dtype, or bound to a device buffer the
// application owns; outputs are read into host memory or written into such a buffer by the same recorded stream.
//
// Threading: a Session is used by one thread at a time. Several sessions may share a device across threads.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "runtime/device.h"

namespace spire::bundle {

class PlanInstance;

class Session {
 public:
  // Throws BundleError when the bundle holds no plan this device can run (naming what it holds and what the
  // device needs), rt::Error for device failures.
  Session(std::shared_ptr<const Bundle> bundle, rt::Device& device);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Bundle& bundle() const { return *bundle_; }
  rt::Device& device() { return device_; }

  // The batch the next run uses: 1..max_batch for a dynamic bundle, else the bundle's own. Set the inputs after
  // it (each batch's plan has its own input buffers). Throws std::invalid_argument out of range.
  int64_t batch() const { return batch_; }
  void set_batch(int64_t batch);
  // The shape of input or output `spec` at the current batch.
  std::vector<int64_t> shape(const TensorSpec& spec) const;

  // Host memory holding the tensor in its dtype, exactly elements_at(batch) * dtype_bytes bytes.
  void set_input(const std::string& name, const void* data, size_t bytes);
  // A device buffer (from this device) holding the input in its device element type (f32 for f32; i32 for i64
  // and bool), copied into the plan by the recorded stream at every run. An empty view unbinds.
  void bind_input(const std::string& name, rt::BufferView view);
  // Same for an output: the run's last commands copy it there.
  void bind_output(const std::string& name, rt::BufferView view);

  void run();
  // Into host memory in the output's dtype; exactly elements_at(batch) * dtype_bytes bytes.
  void get_output(const std::string& name, void* data, size_t bytes);
  // Device time of the last run (the device's timestamps): its input copies, launches and output copies.
  double last_run_ms() const;
  // The plan the current batch runs on (its batch may be larger than batch(): the rows beyond are padding).
  const DevicePlan& current_plan() const;

  const TensorSpec& input(const std::string& name) const;
  const TensorSpec& output(const std::string& name) const;

 private:
  size_t input_index(const std::string& name) const;
  size_t output_index(const std::string& name) const;
  PlanInstance& instance();  // of the current batch, made on first use
  // Makes it: its kernels load while the weights it needs that no other plan uploaded go up on a second thread.
  PlanInstance& load_instance();
  std::shared_ptr<rt::Buffer> weight_buffer(size_t index);
  // The elements of input or output `spec` (`what`) at the current batch, after checking that the application's host
  // memory holds exactly them in the tensor's own dtype and is given (std::invalid_argument naming both sizes).
  uint64_t checked_host_elements(const TensorSpec& spec, const char* what, const void* data, size_t bytes) const;
  // Checks `view` against the largest batch's bytes of `spec` (plan buffer `buffer`) and stores it in `slot`.
  void bind(rt::BufferView& slot, rt::BufferView view, const TensorSpec& spec, uint32_t buffer, const char* what);

  std::shared_ptr<const Bundle> bundle_;
  rt::Device& device_;
  std::vector<const DevicePlan*> plans_;  // this device's, by ascending batch
  std::vector<std::unique_ptr<PlanInstance>> instances_;  // parallel to plans_
  std::vector<std::shared_ptr<rt::Buffer>> weights_;      // by weight index, uploaded on first use
  int64_t batch_ = 0;
  size_t plan_index_ = 0;
  std::vector<rt::BufferView> bound_inputs_, bound_outputs_;
  uint64_t bindings_version_ = 0;  // bumped by every bind: a plan's stream recorded before it is recorded again
  friend class PlanInstance;
};

}  // namespace spire::bundle
