// spire::rt::vulkan::list_devices and open (runtime/backend_registry.h).
#include <fmt/format.h>

#include "runtime/backend_registry.h"
#include "runtime/vulkan/vulkan_device.h"
#include "runtime/vulkan/vulkan_device_info.h"
#include "runtime/vulkan/vulkan_instance.h"

namespace spire::rt::vulkan {

namespace {

// Physical devices in enumeration order; empty when there is no instance or enumeration fails.
std::vector<VkPhysicalDevice> physical_devices() {
  const Instance* inst = instance();
  if (!inst) return {};
  uint32_t n = 0;
  if (vkEnumeratePhysicalDevices(inst->handle, &n, nullptr) < 0) return {};
  std::vector<VkPhysicalDevice> pds(n);
  if (vkEnumeratePhysicalDevices(inst->handle, &n, pds.data()) < 0) return {};
  pds.resize(n);
  return pds;
}

// spire needs Vulkan 1.1 (SPIR-V 1.3) and a compute queue; other devices are not listed.
bool usable(const PhysicalDeviceFacts& f) { return f.api_version >= VK_API_VERSION_1_1 && f.queue_family != ~0u; }

}  // namespace

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  try {
    auto pds = physical_devices();
    for (size_t i = 0; i < pds.size(); ++i) {
      PhysicalDeviceFacts f = describe_physical_device(instance()->functions, pds[i], int(i));
      if (usable(f)) out.push_back(std::move(f.info));
    }
  } catch (const std::exception&) {
    // Listing never throws for a broken driver: a device that cannot be described is not listed.
  }
  return out;
}

std::unique_ptr<Device> open(int index) {
  auto pds = physical_devices();
  if (index < 0 || size_t(index) >= pds.size())
    throw Error(fmt::format("no Vulkan device vulkan:{} ({} present)", index, pds.size()));
  PhysicalDeviceFacts f = describe_physical_device(instance()->functions, pds[index], index);
  if (!usable(f))
    throw Error(fmt::format("vulkan:{} ({}) cannot run spire kernels: it needs Vulkan 1.1 and a compute queue", index,
                            f.info.name));
  return std::make_unique<VulkanDevice>(Context::create(std::move(f)));
}

}  // namespace spire::rt::vulkan
