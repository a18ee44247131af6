// spire::rt::cuda::list_devices / open: the entry points runtime/device.cpp's registry calls.
#include <cstdio>

#include <fmt/format.h>

#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_device_info.h"

namespace spire::rt::cuda {

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  try {
    const Driver& d = driver();
    if (!d.ok) return out;  // no driver, or cuInit failed (no GPU): no CUDA devices, silently
    int count = 0;
    if (d.api.cuDeviceGetCount(&count) != CUDA_SUCCESS) return out;
    for (int i = 0; i < count; ++i) {
      try {
        out.push_back(describe_device(d, i));
      } catch (const std::exception& e) {
        // A device the driver lists but cannot describe is skipped, loudly.
        std::fprintf(stderr, "spire: skipping cuda:%d: %s\n", i, e.what());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spire: listing CUDA devices failed: %s\n", e.what());
    out.clear();
  }
  return out;
}

std::unique_ptr<Device> open(int index) {
  const Driver& d = driver();
  if (!d.ok) throw Error(fmt::format("cuda:{}: no CUDA device can be opened: {}", index, d.problem));
  int count = 0;
  check(d, d.api.cuDeviceGetCount(&count), fmt::format("cuda:{}", index), "cuDeviceGetCount");
  if (index < 0 || index >= count)
    throw Error(fmt::format("no device named cuda:{} (the CUDA driver reports {} device{})", index, count,
                            count == 1 ? "" : "s"));
  DeviceInfo info = describe_device(d, index);
  return std::make_unique<CudaDevice>(std::make_shared<Context>(d, index, std::move(info)));
}

std::string driver_status() {
  const Driver& d = driver();
  if (!d.ok) return d.problem;
  int count = 0;
  d.api.cuDeviceGetCount(&count);
  return fmt::format("{}, {} device{}", driver_version_text(d.version), count, count == 1 ? "" : "s");
}

}  // namespace spire::rt::cuda
