// spire's own process-wide VkInstance, created on first use and kept for the life of the process. Devices adopted
// from the host program (vulkan_external.h) never use it.
#pragma once

#include <cstdint>

#include "runtime/vulkan/vulkan_api.h"
#include "runtime/vulkan/vulkan_functions.h"

namespace spire::rt::vulkan {

struct Instance {
  VkInstance handle = VK_NULL_HANDLE;
  uint32_t api_version = 0;      // the version asked for: min(loader, 1.3)
  bool validation = false;       // VK_LAYER_KHRONOS_validation enabled
  InstanceFunctions functions;   // through volk's loader, for the physical devices of this instance
};

// The instance, or nullptr when there is no Vulkan loader or no instance can be created (then the reason was
// printed to stderr once, only if SPIRE_VULKAN_VALIDATION or SPIRE_VULKAN_VERBOSE asked for diagnostics).
// Never throws.
const Instance* instance();

// The debug-utils messenger setup used both for the instance's own creation and for its lifetime
// (vulkan_validation.cpp).
VkDebugUtilsMessengerCreateInfoEXT debug_messenger_create_info();
void set_validation_enabled(bool on);

}  // namespace spire::rt::vulkan
