// The Vulkan entry points runtime/vulkan calls on a physical device and on a logical device, loaded per instance
// and per device instead of through volk's process-wide pointers.
//
// Why per device: a device spire adopts (vulkan_external.h) belongs to the host program's VkInstance, which may
// come from another loader than the libvulkan.so.1 spire's volk found (a statically linked loader, a game's own
// copy, a layer in between). Its functions must come from the host's vkGetInstanceProcAddr, while spire's own
// devices keep using volk's loader: two sources of function pointers in one process, so each device carries
// its own table. vkGetDeviceProcAddr pointers also skip the loader's dispatch trampoline on every call.
//
// Everything in runtime/vulkan that takes a VkDevice or a VkPhysicalDevice calls through these tables; only the
// instance setup (vulkan_instance.cpp) and device enumeration use volk's globals, for spire's own instance.
#pragma once

#include <string_view>

#include "runtime/vulkan/vulkan_api.h"
#include "runtime/vulkan/vulkan_khr_matrix.h"

namespace spire::rt::vulkan {

// Instance-level functions spire calls with a physical device, plus the two it needs to make and load a device.
#define SPIRE_VULKAN_INSTANCE_FUNCTIONS(X)   \
  X(vkGetPhysicalDeviceProperties)           \
  X(vkGetPhysicalDeviceProperties2)          \
  X(vkGetPhysicalDeviceFeatures2)            \
  X(vkGetPhysicalDeviceMemoryProperties)     \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)    \
  X(vkCreateDevice)                          \
  X(vkGetDeviceProcAddr)

#define SPIRE_VULKAN_DEVICE_FUNCTIONS(X) \
  X(vkDestroyDevice)                     \
  X(vkGetDeviceQueue)                    \
  X(vkDeviceWaitIdle)                    \
  X(vkQueueSubmit)                       \
  X(vkQueueWaitIdle)                     \
  X(vkCreateFence)                       \
  X(vkDestroyFence)                      \
  X(vkResetFences)                       \
  X(vkWaitForFences)                     \
  X(vkGetFenceStatus)                    \
  X(vkCreateBuffer)                      \
  X(vkDestroyBuffer)                     \
  X(vkGetBufferMemoryRequirements)       \
  X(vkAllocateMemory)                    \
  X(vkFreeMemory)                        \
  X(vkBindBufferMemory)                  \
  X(vkMapMemory)                         \
  X(vkCreateShaderModule)                \
  X(vkDestroyShaderModule)               \
  X(vkCreateDescriptorSetLayout)         \
  X(vkDestroyDescriptorSetLayout)        \
  X(vkCreatePipelineLayout)              \
  X(vkDestroyPipelineLayout)             \
  X(vkCreateComputePipelines)            \
  X(vkDestroyPipeline)                   \
  X(vkCreatePipelineCache)               \
  X(vkDestroyPipelineCache)              \
  X(vkGetPipelineCacheData)              \
  X(vkMergePipelineCaches)               \
  X(vkCreateDescriptorPool)              \
  X(vkDestroyDescriptorPool)             \
  X(vkAllocateDescriptorSets)            \
  X(vkUpdateDescriptorSets)              \
  X(vkCreateSemaphore)                   \
  X(vkDestroySemaphore)                  \
  X(vkCreateCommandPool)                 \
  X(vkDestroyCommandPool)                \
  X(vkAllocateCommandBuffers)            \
  X(vkResetCommandBuffer)                \
  X(vkBeginCommandBuffer)                \
  X(vkEndCommandBuffer)                  \
  X(vkCreateQueryPool)                   \
  X(vkDestroyQueryPool)                  \
  X(vkGetQueryPoolResults)               \
  X(vkCmdBindPipeline)                   \
  X(vkCmdBindDescriptorSets)             \
  X(vkCmdPushConstants)                  \
  X(vkCmdDispatch)                       \
  X(vkCmdPipelineBarrier)                \
  X(vkCmdCopyBuffer)                     \
  X(vkCmdFillBuffer)                     \
  X(vkCmdResetQueryPool)                 \
  X(vkCmdWriteTimestamp)

#define SPIRE_VULKAN_DECLARE_FUNCTION(name) PFN_##name name = nullptr;

struct InstanceFunctions {
  SPIRE_VULKAN_INSTANCE_FUNCTIONS(SPIRE_VULKAN_DECLARE_FUNCTION)
  // Optional (VK_KHR_cooperative_matrix): null where the instance's loader or drivers lack it.
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR = nullptr;
  // Optional (VK_NV_cooperative_matrix2), likewise.
  PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV
      vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV = nullptr;

  // Every function above through `get_instance_proc_addr` for `instance`. Throws rt::Error naming the ones
  // missing (an instance created for Vulkan 1.0 lacks vkGetPhysicalDeviceProperties2, for example).
  static InstanceFunctions load(PFN_vkGetInstanceProcAddr get_instance_proc_addr, VkInstance instance);
};

struct DeviceFunctions {
  SPIRE_VULKAN_DEVICE_FUNCTIONS(SPIRE_VULKAN_DECLARE_FUNCTION)
  // Optional (VK_KHR_pipeline_executable_properties, enabled only for SPIRE_VULKAN_PIPELINE_STATS or
  // SPIRE_VULKAN_PIPELINE_IR): null otherwise.
  PFN_vkGetPipelineExecutablePropertiesKHR vkGetPipelineExecutablePropertiesKHR = nullptr;
  PFN_vkGetPipelineExecutableStatisticsKHR vkGetPipelineExecutableStatisticsKHR = nullptr;
  PFN_vkGetPipelineExecutableInternalRepresentationsKHR vkGetPipelineExecutableInternalRepresentationsKHR = nullptr;
  // Optional (Vulkan 1.2, used only where hostQueryReset was enabled): null where the device has no 1.2.
  PFN_vkResetQueryPool vkResetQueryPool = nullptr;
  // Optional (VK_KHR_external_memory_fd, enabled where the device has it): null otherwise.
  PFN_vkGetMemoryFdKHR vkGetMemoryFdKHR = nullptr;
  // Optional (VK_KHR_external_semaphore_fd, enabled with has_shared_timeline): null otherwise.
  PFN_vkGetSemaphoreFdKHR vkGetSemaphoreFdKHR = nullptr;

  // Every function above through `get_device_proc_addr` for `device`; throws rt::Error naming the ones missing.
  static DeviceFunctions load(PFN_vkGetDeviceProcAddr get_device_proc_addr, VkDevice device, std::string_view device_id);
};

// One global memory barrier: the accesses `src` of the stages `src_stages` recorded or submitted before it happen
// before, and are visible to, the accesses `dst` of the stages `dst_stages` after it (across submissions on a queue).
void memory_barrier(const DeviceFunctions& fn, VkCommandBuffer cmd, VkPipelineStageFlags src_stages, VkAccessFlags src,
                    VkPipelineStageFlags dst_stages, VkAccessFlags dst);

}  // namespace spire::rt::vulkan
