#include "runtime/vulkan/vulkan_functions.h"

#include <string>

#include <fmt/format.h>

#include "runtime/device.h"

namespace spire::rt::vulkan {

// Loads each function of a SPIRE_VULKAN_*_FUNCTIONS list into f through `get` (vkGet*ProcAddr) on `handle`, adding
// the name of each one the driver lacks to `missing`.
#define SPIRE_VULKAN_LOAD(name)                                                 \
  f.name = reinterpret_cast<PFN_##name>(get(handle, #name));                    \
  if (!f.name) missing += (missing.empty() ? "" : ", ") + std::string(#name);

InstanceFunctions InstanceFunctions::load(PFN_vkGetInstanceProcAddr get_instance_proc_addr, VkInstance instance) {
  if (!get_instance_proc_addr) throw Error("no vkGetInstanceProcAddr was given to load the Vulkan instance's functions");
  InstanceFunctions f;
  std::string missing;
  const auto get = get_instance_proc_addr;
  const VkInstance handle = instance;
  SPIRE_VULKAN_INSTANCE_FUNCTIONS(SPIRE_VULKAN_LOAD)
  if (!missing.empty())
    throw Error(fmt::format("the Vulkan instance lacks {} (spire needs an instance created for Vulkan 1.1 or newer)",
                            missing));
  f.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
      get_instance_proc_addr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  f.vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV =
      reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV>(
          get_instance_proc_addr(instance, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  return f;
}

DeviceFunctions DeviceFunctions::load(PFN_vkGetDeviceProcAddr get_device_proc_addr, VkDevice device,
                                      std::string_view device_id) {
  DeviceFunctions f;
  std::string missing;
  const auto get = get_device_proc_addr;
  const VkDevice handle = device;
  SPIRE_VULKAN_DEVICE_FUNCTIONS(SPIRE_VULKAN_LOAD)
  if (!missing.empty()) throw Error(fmt::format("{}: vkGetDeviceProcAddr found no {}", device_id, missing));
  f.vkGetPipelineExecutablePropertiesKHR = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      get_device_proc_addr(device, "vkGetPipelineExecutablePropertiesKHR"));
  f.vkGetPipelineExecutableStatisticsKHR = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      get_device_proc_addr(device, "vkGetPipelineExecutableStatisticsKHR"));
  f.vkGetPipelineExecutableInternalRepresentationsKHR =
      reinterpret_cast<PFN_vkGetPipelineExecutableInternalRepresentationsKHR>(
          get_device_proc_addr(device, "vkGetPipelineExecutableInternalRepresentationsKHR"));
  f.vkResetQueryPool = reinterpret_cast<PFN_vkResetQueryPool>(get_device_proc_addr(device, "vkResetQueryPool"));
  f.vkGetMemoryFdKHR = reinterpret_cast<PFN_vkGetMemoryFdKHR>(get_device_proc_addr(device, "vkGetMemoryFdKHR"));
  f.vkGetSemaphoreFdKHR =
      reinterpret_cast<PFN_vkGetSemaphoreFdKHR>(get_device_proc_addr(device, "vkGetSemaphoreFdKHR"));
  return f;
}

#undef SPIRE_VULKAN_LOAD

void memory_barrier(const DeviceFunctions& fn, VkCommandBuffer cmd, VkPipelineStageFlags src_stages, VkAccessFlags src,
                    VkPipelineStageFlags dst_stages, VkAccessFlags dst) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = src;
  mb.dstAccessMask = dst;
  fn.vkCmdPipelineBarrier(cmd, src_stages, dst_stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

}  // namespace spire::rt::vulkan
