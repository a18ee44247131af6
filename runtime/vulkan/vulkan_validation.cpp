#include "runtime/vulkan/vulkan_validation.h"

#include <atomic>
#include <cstdio>

#include "runtime/vulkan/vulkan_instance.h"

namespace spire::rt::vulkan {

namespace {

std::atomic<uint64_t> g_messages{0};
std::atomic<bool> g_enabled{false};

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT, const VkDebugUtilsMessengerCallbackDataEXT* data,
                                          void*) {
  const char* level = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error" : "warning";
  g_messages.fetch_add(1, std::memory_order_relaxed);
  std::fprintf(stderr, "spire vulkan validation %s: %s\n", level, data && data->pMessage ? data->pMessage : "(no text)");
  std::fflush(stderr);
  return VK_FALSE;  // never abort the call: the test that counts messages decides
}

}  // namespace

uint64_t validation_message_count() { return g_messages.load(std::memory_order_relaxed); }
bool validation_enabled() { return g_enabled.load(); }
void set_validation_enabled(bool on) { g_enabled.store(on); }

VkDebugUtilsMessengerCreateInfoEXT debug_messenger_create_info() {
  VkDebugUtilsMessengerCreateInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = on_message;
  return info;
}

}  // namespace spire::rt::vulkan
