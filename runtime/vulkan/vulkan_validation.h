// Khronos validation for the Vulkan runtime. With SPIRE_VULKAN_VALIDATION=1 in the environment the process-wide
// instance enables VK_LAYER_KHRONOS_validation and a VK_EXT_debug_utils messenger; every warning or error it
// reports is printed to stderr and counted, so a test can fail on any message.
#pragma once

#include <cstdint>

namespace spire::rt::vulkan {

// Warnings and errors reported by the validation layer (and the loader) since the process started.
// Always 0 when validation is off.
uint64_t validation_message_count();

// True when SPIRE_VULKAN_VALIDATION=1 asked for validation and the layer was found and enabled.
bool validation_enabled();

}  // namespace spire::rt::vulkan
