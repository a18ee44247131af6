// A stand-in for a game or an app that embeds spire: its own Vulkan instance, device, queue and buffers, made with
// plain Vulkan calls through its own loader entry (dlopen of libvulkan.so.1, then vkGetInstanceProcAddr), never
// through spire or spire's volk. Tests hand its objects to spire (rt::vulkan::adopt_device / adopt_buffer) and
// check the results in its own mapped memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/vulkan/vulkan_external.h"

namespace spire::test_app {

// How the app describes the optional features it enabled to spire.
enum class AppFeatures {
  None,               // enables nothing optional and gives spire no features chain
  PerFeatureStructs,  // VkPhysicalDevice16BitStorageFeatures, ...ShaderFloat16Int8Features, ...AtomicFloat...
  VulkanVersionStructs,  // VkPhysicalDeviceVulkan11Features and ...Vulkan12Features (devices of Vulkan 1.2+)
};

struct AppOptions {
  AppFeatures features = AppFeatures::VulkanVersionStructs;
  // VK_LAYER_KHRONOS_validation on the app's instance, reporting through `messenger` (both or neither).
  bool validation = false;
  const VkDebugUtilsMessengerCreateInfoEXT* messenger = nullptr;
};

// A host-visible, coherent VkBuffer of the app's, persistently mapped.
struct AppBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  uint64_t bytes = 0;
  template <class T>
  T* as() const { return static_cast<T*>(mapped); }
};

class AppVulkan {
 public:
  // nullptr, with the reason in `why`, when there is no Vulkan loader or no device with a compute queue.
  static std::unique_ptr<AppVulkan> create(const AppOptions& options, std::string* why);
  ~AppVulkan();  // destroys its buffers, command pool, device, messenger and instance, in that order
  AppVulkan(const AppVulkan&) = delete;
  AppVulkan& operator=(const AppVulkan&) = delete;

  // What spire's adopt_device needs, with the app's own vkGetInstanceProcAddr.
  rt::vulkan::ExternalVulkan external() const;
  PFN_vkGetInstanceProcAddr loader_entry() const { return get_instance_proc_addr_; }

  // STORAGE_BUFFER | TRANSFER_SRC | TRANSFER_DST, host-visible and coherent, mapped.
  AppBuffer& create_buffer(uint64_t bytes);
  // Records vkCmdFillBuffer(buffer, whole size, pattern) in the app's own command buffer, submits it on the
  // app's queue and waits for its fence.
  void fill_with_own_commands(const AppBuffer& buffer, uint32_t pattern);
  // The device's own report of a feature, to tell "not enabled" from "not supported".
  bool device_supports_float64() const;
  std::string device_name() const;

 private:
  AppVulkan() = default;
  void load_instance_functions();
  void create_device(AppFeatures features);

  void* library_ = nullptr;
  PFN_vkGetInstanceProcAddr get_instance_proc_addr_ = nullptr;
  uint32_t api_version_ = 0;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<std::unique_ptr<AppBuffer>> buffers_;

  // The features chain given to vkCreateDevice, kept for external().enabled_features.
  bool has_chain_ = false;
  // (sType set in create_device: brace-initializing only sType here would warn in every file including this one)
  VkPhysicalDeviceFeatures2 features2_{};
  VkPhysicalDeviceVulkan11Features vulkan11_{};
  VkPhysicalDeviceVulkan12Features vulkan12_{};
  VkPhysicalDevice16BitStorageFeatures storage16_{};
  VkPhysicalDeviceShaderFloat16Int8Features float16_{};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float_{};

  // The app's own function pointers: the few it calls, fetched from its own loader entry.
#define SPIRE_APP_FUNCTIONS(X)                                                                             \
  X(vkCreateInstance) X(vkEnumerateInstanceLayerProperties) X(vkDestroyInstance)                           \
  X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties) X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceFeatures2) X(vkGetPhysicalDeviceMemoryProperties)                                   \
  X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice) X(vkDestroyDevice) X(vkGetDeviceQueue)         \
  X(vkCreateDebugUtilsMessengerEXT) X(vkDestroyDebugUtilsMessengerEXT) X(vkCreateBuffer) X(vkDestroyBuffer) \
  X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) \
  X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkFreeCommandBuffers)        \
  X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkCmdFillBuffer) X(vkCmdPipelineBarrier) X(vkQueueSubmit) \
  X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) X(vkDeviceWaitIdle)
#define SPIRE_APP_DECLARE(name) PFN_##name name = nullptr;
  SPIRE_APP_FUNCTIONS(SPIRE_APP_DECLARE)
#undef SPIRE_APP_DECLARE
};

}  // namespace spire::test_app
