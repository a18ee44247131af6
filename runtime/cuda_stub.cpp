// Temporary: stands in for runtime/cuda until that folder has its CMakeLists.txt (runtime/CMakeLists.txt adds
// this file only then), so spire_runtime links and simply lists no CUDA devices.
#include <fmt/format.h>

#include "runtime/backend_registry.h"

namespace spire::rt::cuda {

std::vector<DeviceInfo> list_devices() { return {}; }
std::unique_ptr<Device> open(int index) {
  throw Error(fmt::format("cuda:{}: this build of spire has no CUDA runtime", index));
}

}  // namespace spire::rt::cuda
