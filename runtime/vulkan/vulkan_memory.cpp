#include "runtime/vulkan/vulkan_memory.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/vulkan/vulkan_context.h"

namespace spire::rt::vulkan {

namespace {

constexpr VkMemoryPropertyFlags kAvoid =
    VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT | 0x40 /*DEVICE_COHERENT_AMD*/;

// The first allowed type with all `want` flags and none of the exotic ones. Drivers list types best first.
int find_type(const VkPhysicalDeviceMemoryProperties& mp, uint32_t allowed, VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
    if ((allowed & (1u << i)) && (f & want) == want && !(f & kAvoid)) return int(i);
  }
  return -1;
}

std::string human_bytes(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{} bytes ({:.2f} GiB)", b, double(b) / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{} bytes ({:.2f} MiB)", b, double(b) / double(1ull << 20));
  return fmt::format("{} bytes", b);
}

}  // namespace

Allocation allocate(const Context& ctx, uint64_t bytes, Memory kind, bool exportable) {
  const std::string& id = ctx.id();
  const char* kind_name = kind == Memory::DeviceLocal    ? "device-local"
                          : kind == Memory::DeviceMapped ? "host-mapped device-local"
                                                         : "host-visible";
  auto oom = [&](const std::string& why) {
    return OutOfMemory(fmt::format("cannot allocate {} of {} memory on {} ({}): {}", human_bytes(bytes), kind_name, id,
                                   ctx.info().name, why));
  };
  if (ctx.facts.max_allocation_bytes && bytes > ctx.facts.max_allocation_bytes)
    throw oom(fmt::format("the driver's largest single allocation is {}", human_bytes(ctx.facts.max_allocation_bytes)));

  Allocation a;
  a.vk_bytes = std::max<uint64_t>(4, (bytes + 3) / 4 * 4);
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = a.vk_bytes;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (exportable && !ctx.fn.vkGetMemoryFdKHR)
    throw Error(fmt::format("{} ({}) cannot export memory: VK_KHR_external_memory_fd is not enabled", id, ctx.info().name));
  constexpr auto kOpaqueFd = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  external.handleTypes = kOpaqueFd;
  if (exportable) bi.pNext = &external;

  // Check the heaps before creating anything: a request beyond them can never succeed.
  const auto& mp = ctx.facts.memory;
  constexpr VkMemoryPropertyFlags device = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  constexpr VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const VkMemoryPropertyFlags want = kind == Memory::DeviceLocal    ? device
                                     : kind == Memory::DeviceMapped ? device | host
                                                                    : host;
  uint64_t largest_heap = 0;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((mp.memoryTypes[i].propertyFlags & want) == want)
      largest_heap = std::max<uint64_t>(largest_heap, mp.memoryHeaps[mp.memoryTypes[i].heapIndex].size);
  if (largest_heap && bytes > largest_heap) throw oom(fmt::format("its largest {} heap holds {}", kind_name, human_bytes(largest_heap)));
  VkResult created = ctx.fn.vkCreateBuffer(ctx.device, &bi, nullptr, &a.buffer);
  if (created == VK_ERROR_OUT_OF_DEVICE_MEMORY || created == VK_ERROR_OUT_OF_HOST_MEMORY)
    throw oom(fmt::format("vkCreateBuffer returned {}", result_name(created)));
  check(created, "vkCreateBuffer", id);
  VkMemoryRequirements req{};
  ctx.fn.vkGetBufferMemoryRequirements(ctx.device, a.buffer, &req);
  int type = find_type(mp, req.memoryTypeBits, want);
  if (type < 0 && kind == Memory::DeviceLocal) type = find_type(mp, req.memoryTypeBits, 0);  // no device-local type
  if (type < 0) {
    ctx.fn.vkDestroyBuffer(ctx.device, a.buffer, nullptr);
    throw Error(fmt::format("{} ({}) has no {} memory type for storage buffers", id, ctx.info().name, kind_name));
  }
  uint64_t heap = mp.memoryHeaps[mp.memoryTypes[type].heapIndex].size;
  if (req.size > heap) {
    ctx.fn.vkDestroyBuffer(ctx.device, a.buffer, nullptr);
    throw oom(fmt::format("its memory heap holds {}", human_bytes(heap)));
  }

  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = uint32_t(type);
  // An exported buffer has its memory to itself: the importer maps the whole allocation as that buffer.
  VkExportMemoryAllocateInfo export_info{VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO};
  VkMemoryDedicatedAllocateInfo dedicated{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO};
  if (exportable) {
    export_info.handleTypes = kOpaqueFd;
    dedicated.buffer = a.buffer;
    ai.pNext = &export_info;
    export_info.pNext = &dedicated;
  }
  VkResult r = ctx.fn.vkAllocateMemory(ctx.device, &ai, nullptr, &a.memory);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
    ctx.fn.vkDestroyBuffer(ctx.device, a.buffer, nullptr);
    throw oom(fmt::format("vkAllocateMemory returned {}", result_name(r)));
  }
  try {
    check(r, "vkAllocateMemory", id);
    check(ctx.fn.vkBindBufferMemory(ctx.device, a.buffer, a.memory, 0), "vkBindBufferMemory", id);
    VkMemoryPropertyFlags flags = mp.memoryTypes[type].propertyFlags;
    constexpr VkMemoryPropertyFlags coherent = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    // Device-local memory that is also host-visible (integrated GPUs, lavapipe, resizable BAR) is mapped too, so
    // transfers skip the staging copy.
    bool staged = kind == Memory::DeviceLocal && ctx.force_staging;
    if ((flags & coherent) == coherent && !staged)
      check(ctx.fn.vkMapMemory(ctx.device, a.memory, 0, VK_WHOLE_SIZE, 0, &a.mapped), "vkMapMemory", id);
  } catch (...) {
    release(ctx, a);
    throw;
  }
  return a;
}

int export_fd(const Context& ctx, const Allocation& a) {
  VkMemoryGetFdInfoKHR gi{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR};
  gi.memory = a.memory;
  gi.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  int fd = -1;
  check(ctx.fn.vkGetMemoryFdKHR(ctx.device, &gi, &fd), "vkGetMemoryFdKHR", ctx.id());
  return fd;
}

void release(const Context& ctx, Allocation& a) {
  if (a.buffer) ctx.fn.vkDestroyBuffer(ctx.device, a.buffer, nullptr);
  if (a.memory) ctx.fn.vkFreeMemory(ctx.device, a.memory, nullptr);  // unmaps implicitly
  a = Allocation{};
}

}  // namespace spire::rt::vulkan
