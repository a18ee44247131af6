// The one place runtime/vulkan includes Vulkan: through volk, so no symbol binds to libvulkan at link time and
// a binary starts on a machine without a Vulkan loader. Also the VkResult checking every call goes through.
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <volk.h>

#include <string>
#include <string_view>

namespace spire::rt::vulkan {

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" for the enum value, or "VkResult(-42)" for one this build does not know.
std::string_view result_name(VkResult r);

// Throws rt::Error (rt::OutOfMemory for the two out-of-memory results) naming the call, the result and the
// device, e.g. "vkCreateBuffer failed with VK_ERROR_OUT_OF_DEVICE_MEMORY on vulkan:0". Success codes
// (VK_SUCCESS and the positive ones such as VK_NOT_READY) pass.
void check(VkResult r, const char* call, std::string_view device_id);

}  // namespace spire::rt::vulkan
