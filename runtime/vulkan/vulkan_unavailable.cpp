// Built instead of the Vulkan runtime when volk or the Vulkan headers were missing at configure time: the
// registry then sees no Vulkan devices, as it would on a machine without a Vulkan loader.
#include "runtime/backend_registry.h"
#include "runtime/cuda_peer.h"
#include "runtime/vulkan/vulkan_validation.h"

namespace spire::rt::vulkan {

std::vector<DeviceInfo> list_devices() { return {}; }
std::unique_ptr<Device> open(int index) {
  throw Error("this build of spire has no Vulkan runtime (volk and the Vulkan headers were missing when it was configured)");
}
uint64_t validation_message_count() { return 0; }
bool validation_enabled() { return false; }

}  // namespace spire::rt::vulkan

namespace spire::rt {

std::optional<int> cuda_peer(const Device& device) {
  if (device.info().backend == Backend::Cuda) return device.info().index;
  return std::nullopt;
}

std::string cuda_ordering(Device& device) {
  return device.info().backend == Backend::Cuda ? "the CUDA device's own streams" : "";
}

}  // namespace spire::rt
