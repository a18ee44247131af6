// One VkBuffer with its own VkDeviceMemory: memory type choice, size checks and persistent mapping.
#pragma once

#include <cstdint>

#include "runtime/device.h"
#include "runtime/vulkan/vulkan_api.h"

namespace spire::rt::vulkan {

struct Context;

struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;    // non-null when the memory is host-visible and coherent: the host reads/writes it
  uint64_t vk_bytes = 0;     // the VkBuffer's size: the request rounded up to 4 bytes (fills work on words)
};

// Allocates `bytes` (usage: storage, transfer source and destination) in the memory `kind` asks for.
// Throws OutOfMemory naming the bytes and the device when it exceeds the heap or maxMemoryAllocationSize or
// the driver runs out; Error for any other failure. `exportable`: a dedicated allocation another API may import by
// an opaque file descriptor (export_fd; the device must have VK_KHR_external_memory_fd).
Allocation allocate(const Context& ctx, uint64_t bytes, Memory kind, bool exportable = false);
void release(const Context& ctx, Allocation& a);
// A new file descriptor of an exportable allocation's memory, which the importer owns; throws Error on failure.
int export_fd(const Context& ctx, const Allocation& a);

}  // namespace spire::rt::vulkan
