// The one place runtime/vulkan includes Vulkan: through volk, so no symbol binds to libvulkan at link time and
// a binary starts on a machine without a Vulkan loader. Also the VkResult checking every call goes through.
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <volk.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace spire::rt::vulkan {

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" for the enum value, or "VkResult(-42)" for one this build does not know.
std::string_view result_name(VkResult r);

// Throws rt::Error (rt::OutOfMemory for the two out-of-memory results) naming the call, the result and the
// device, e.g. "vkCreateBuffer failed with VK_ERROR_OUT_OF_DEVICE_MEMORY on vulkan:0". Success codes
// (VK_SUCCESS and the positive ones such as VK_NOT_READY) pass.
void check(VkResult r, const char* call, std::string_view device_id);

// Whether an enumeration of extensions (the instance's, a layer's or a device's) holds `name`.
inline bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  for (const VkExtensionProperties& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

}  // namespace spire::rt::vulkan
