#include "runtime/cuda/cuda_context.h"

namespace spire::rt::cuda {

Context::Context(const Driver& d, int index, DeviceInfo info) : driver_(d), info_(std::move(info)) {
  check(api().cuDeviceGet(&device_, index), "cuDeviceGet");
  check(api().cuDevicePrimaryCtxRetain(&ctx_, device_), "cuDevicePrimaryCtxRetain");
  try {
    make_current();
    // Non-blocking: our work never waits on (or for) the legacy default stream other libraries may use.
    check(api().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  } catch (...) {
    api().cuDevicePrimaryCtxRelease(device_);
    throw;
  }
}

Context::~Context() {
  // Destructors never throw; failures here only leak what the context release frees anyway.
  api().cuCtxSetCurrent(ctx_);
  api().cuStreamSynchronize(stream_);
  for (CUevent e : fence_events_.drain()) api().cuEventDestroy(e);
  api().cuStreamDestroy(stream_);
  api().cuDevicePrimaryCtxRelease(device_);
}

void Context::make_current() const { check(api().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }

void Context::synchronize(std::string_view what) {
  count_wait();
  check(api().cuStreamSynchronize(stream_), "cuStreamSynchronize", what);
}

CUevent Context::take_fence_event() {
  if (std::optional<CUevent> kept = fence_events_.take()) return *kept;
  CUevent e = nullptr;
  check(api().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate", "(fence)");
  return e;
}

void Context::return_fence_event(CUevent e) { fence_events_.give(e); }

}  // namespace spire::rt::cuda
