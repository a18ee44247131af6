// rt::Buffer for Vulkan, and the synchronous transfers into and out of it.
#pragma once

#include <memory>

#include "runtime/device.h"
#include "runtime/vulkan/vulkan_context.h"
#include "runtime/vulkan/vulkan_memory.h"

namespace spire::rt::vulkan {

class VulkanBuffer final : public Buffer {
 public:
  // A buffer spire allocates and frees.
  VulkanBuffer(std::shared_ptr<Context> ctx, uint64_t bytes, Memory memory);
  // The host program's VkBuffer (vulkan_external.h): used, never freed. `bytes` is a multiple of 4. It is not
  // mapped (spire does not know its memory), so transfers go through the staging buffer and memory() says
  // DeviceLocal.
  struct Adopted {};
  // A buffer of device-local memory that another API imports (vulkan_cuda_bridge.h): allocation() gives export_fd
  // what it needs.
  struct Exportable {};
  VulkanBuffer(std::shared_ptr<Context> ctx, uint64_t bytes, Exportable);
  VulkanBuffer(std::shared_ptr<Context> ctx, VkBuffer host_buffer, uint64_t bytes, Adopted);
  ~VulkanBuffer() override;
  uint64_t size() const override { return bytes_; }
  Memory memory() const override { return memory_; }

  VkBuffer handle() const { return alloc_.buffer; }
  // The bytes fills may write: size() rounded up to whole 32-bit words (the VkBuffer's size for spire's own).
  uint64_t vk_bytes() const { return alloc_.vk_bytes; }
  void* mapped() const override { return alloc_.mapped; }
  const Context& context() const { return *ctx_; }
  bool adopted() const { return adopted_; }
  const Allocation& allocation() const { return alloc_; }

 private:
  std::shared_ptr<Context> ctx_;
  uint64_t bytes_;
  Memory memory_;
  Allocation alloc_;  // for an adopted buffer: the host's VkBuffer and no memory
  bool adopted_ = false;
};

// The Vulkan buffer behind `b`, checked to belong to `ctx`; `what` names the use in the error message.
const VulkanBuffer& vulkan_buffer(const Buffer* b, const Context& ctx, std::string_view what);

// Synchronous transfers (Device::upload/download/fill): they first wait for all submitted work, then use the
// mapping when there is one and a staging buffer otherwise.
void upload(Context& ctx, const VulkanBuffer& dst, const void* src, uint64_t bytes, uint64_t offset);
void download(Context& ctx, const VulkanBuffer& src, void* dst, uint64_t bytes, uint64_t offset);
void fill(Context& ctx, const VulkanBuffer& dst, uint32_t pattern);

}  // namespace spire::rt::vulkan
