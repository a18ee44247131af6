#include "runtime/vulkan/vulkan_buffer.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace spire::rt::vulkan {

VulkanBuffer::VulkanBuffer(std::shared_ptr<Context> ctx, uint64_t bytes, Memory memory)
    : ctx_(std::move(ctx)), bytes_(bytes), memory_(memory), alloc_(allocate(*ctx_, bytes, memory)) {}

VulkanBuffer::VulkanBuffer(std::shared_ptr<Context> ctx, uint64_t bytes, Exportable)
    : ctx_(std::move(ctx)),
      bytes_(bytes),
      memory_(Memory::DeviceLocal),
      alloc_(allocate(*ctx_, bytes, Memory::DeviceLocal, /*exportable=*/true)) {}

VulkanBuffer::VulkanBuffer(std::shared_ptr<Context> ctx, VkBuffer host_buffer, uint64_t bytes, Adopted)
    : ctx_(std::move(ctx)), bytes_(bytes), memory_(Memory::DeviceLocal), adopted_(true) {
  alloc_.buffer = host_buffer;
  alloc_.vk_bytes = bytes;
}

VulkanBuffer::~VulkanBuffer() {
  if (!adopted_) release(*ctx_, alloc_);
}

const VulkanBuffer& vulkan_buffer(const Buffer* b, const Context& ctx, std::string_view what) {
  if (!b) throw Error(fmt::format("{}: no buffer given (null view) on {}", what, ctx.id()));
  auto* vb = dynamic_cast<const VulkanBuffer*>(b);
  if (!vb) throw Error(fmt::format("{}: the buffer was not allocated by a Vulkan device, but used on {}", what, ctx.id()));
  if (&vb->context() != &ctx)
    throw Error(fmt::format("{}: the buffer belongs to {}, but is used on {}", what, vb->context().id(), ctx.id()));
  return *vb;
}

namespace {

constexpr uint64_t kStagingChunk = 64ull << 20;

void check_range(const Context& ctx, const VulkanBuffer& b, uint64_t bytes, uint64_t offset, const char* what) {
  if (offset > b.size() || bytes > b.size() - offset)
    throw Error(fmt::format("{} of {} bytes at offset {} overruns a buffer of {} bytes on {}", what, bytes, offset, b.size(),
                            ctx.id()));
}

// Work submitted earlier (already finished: the queue is idle) must be visible to the transfer that follows.
void barrier_before_transfer(const DeviceFunctions& fn, VkCommandBuffer cmd) {
  memory_barrier(fn, cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                 VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
                 VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
}

void barrier_transfer_to_host(const DeviceFunctions& fn, VkCommandBuffer cmd) {
  memory_barrier(fn, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                 VK_ACCESS_HOST_READ_BIT);
}

}  // namespace

void upload(Context& ctx, const VulkanBuffer& dst, const void* src, uint64_t bytes, uint64_t offset) {
  check_range(ctx, dst, bytes, offset, "upload");
  if (bytes == 0) return;
  ctx.wait_idle();
  if (dst.mapped()) {
    std::memcpy(static_cast<char*>(dst.mapped()) + offset, src, bytes);
    return;
  }
  std::lock_guard lock(ctx.transfer_mutex);
  for (uint64_t done = 0; done < bytes;) {
    uint64_t n = std::min(bytes - done, kStagingChunk);
    Allocation& staging = ctx.staging(std::min(bytes, kStagingChunk));
    std::memcpy(staging.mapped, static_cast<const char*>(src) + done, n);
    ctx.run_now([&](VkCommandBuffer cmd) {
      barrier_before_transfer(ctx.fn, cmd);
      VkBufferCopy region{0, offset + done, n};
      ctx.fn.vkCmdCopyBuffer(cmd, staging.buffer, dst.handle(), 1, &region);
    });
    done += n;
  }
}

void download(Context& ctx, const VulkanBuffer& src, void* dst, uint64_t bytes, uint64_t offset) {
  check_range(ctx, src, bytes, offset, "download");
  if (bytes == 0) return;
  ctx.wait_idle();
  if (src.mapped()) {
    std::memcpy(dst, static_cast<const char*>(src.mapped()) + offset, bytes);
    return;
  }
  std::lock_guard lock(ctx.transfer_mutex);
  for (uint64_t done = 0; done < bytes;) {
    uint64_t n = std::min(bytes - done, kStagingChunk);
    Allocation& staging = ctx.staging(std::min(bytes, kStagingChunk));
    ctx.run_now([&](VkCommandBuffer cmd) {
      barrier_before_transfer(ctx.fn, cmd);
      VkBufferCopy region{offset + done, 0, n};
      ctx.fn.vkCmdCopyBuffer(cmd, src.handle(), staging.buffer, 1, &region);
      barrier_transfer_to_host(ctx.fn, cmd);
    });
    std::memcpy(static_cast<char*>(dst) + done, staging.mapped, n);
    done += n;
  }
}

void fill(Context& ctx, const VulkanBuffer& dst, uint32_t pattern) {
  ctx.wait_idle();
  if (dst.mapped()) {
    auto* words = static_cast<uint32_t*>(dst.mapped());
    std::fill(words, words + dst.vk_bytes() / 4, pattern);
    return;
  }
  std::lock_guard lock(ctx.transfer_mutex);
  ctx.run_now([&](VkCommandBuffer cmd) {
    barrier_before_transfer(ctx.fn, cmd);
    // Not VK_WHOLE_SIZE: an adopted buffer may be larger than the part the host lent spire.
    ctx.fn.vkCmdFillBuffer(cmd, dst.handle(), 0, dst.vk_bytes(), pattern);
  });
}

}  // namespace spire::rt::vulkan
