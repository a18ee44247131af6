// One opened CUDA device: the retained primary context, the stream all work goes to, and a pool of fence
// events. Shared (shared_ptr) by the device and everything it creates (buffers, kernels, command streams),
// so the context outlives the last of them whatever order the user drops them in.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/handle_pool.h"

namespace spire::rt::cuda {

class Context {
 public:
  Context(const Driver& d, int index, DeviceInfo info);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DriverApi& api() const { return driver_.api; }
  const Driver& driver() const { return driver_; }
  const DeviceInfo& info() const { return info_; }
  const std::string& id() const { return info_.id; }
  CUstream stream() const { return stream_; }

  // Makes this device's context current on the calling thread (every entry point calls it first: CUDA
  // contexts are per thread, and the user may use several devices or threads).
  void make_current() const;
  void check(CUresult r, std::string_view call, std::string_view context = {}) const {
    if (r != CUDA_SUCCESS) throw_result(driver_, r, info_.id, call, context);
  }

  // Events without timing, recycled for fences.
  CUevent take_fence_event();
  void return_fence_event(CUevent e);

  // Device::sync_counts: every submit of work from the host and every host wait for the device is counted here.
  void count_submit() { ++submits_; }
  void count_wait() { ++waits_; }
  SyncCounts sync_counts() const { return {submits_.load(), waits_.load()}; }
  // Waits (counted) until everything enqueued on stream() is done; `what` says after what, for the error message.
  void synchronize(std::string_view what);

 private:
  const Driver& driver_;
  DeviceInfo info_;
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  HandlePool<CUevent> fence_events_;
  std::atomic<uint64_t> submits_{0}, waits_{0};
};

}  // namespace spire::rt::cuda
