#include "runtime/vulkan/vulkan_device.h"

#include <fmt/format.h>

#include "runtime/vulkan/vulkan_buffer.h"
#include "runtime/vulkan/vulkan_command_stream.h"
#include "runtime/vulkan/vulkan_kernel.h"

namespace spire::rt::vulkan {

std::shared_ptr<Buffer> VulkanDevice::alloc(uint64_t bytes, Memory memory) {
  if (memory == Memory::DeviceMapped) {
    // Plain device-local memory where none is mapped: the forced staging path, no such memory type, or a BAR heap
    // too small for the request.
    if (!ctx_->force_staging) {
      try {
        return std::make_shared<VulkanBuffer>(ctx_, bytes, Memory::DeviceMapped);
      } catch (const Error&) {
      }
    }
    memory = Memory::DeviceLocal;
  }
  return std::make_shared<VulkanBuffer>(ctx_, bytes, memory);
}

void VulkanDevice::upload(Buffer& dst, const void* src, uint64_t bytes, uint64_t offset) {
  vulkan::upload(*ctx_, vulkan_buffer(&dst, *ctx_, "upload"), src, bytes, offset);
}

void VulkanDevice::download(const Buffer& src, void* dst, uint64_t bytes, uint64_t offset) {
  vulkan::download(*ctx_, vulkan_buffer(&src, *ctx_, "download"), dst, bytes, offset);
}

void VulkanDevice::fill(Buffer& dst, uint32_t pattern) { vulkan::fill(*ctx_, vulkan_buffer(&dst, *ctx_, "fill"), pattern); }

std::shared_ptr<Kernel> VulkanDevice::load(const KernelBinary& binary) { return load_kernel(ctx_, binary); }

std::string VulkanDevice::kernel_cache_summary() const {
  const PipelineCacheStats s = pipeline_cache_stats();
  const std::string hits =
      s.hits_known ? fmt::format("{} of {} pipelines found in it", s.cache_hits, s.pipelines_created)
                   : fmt::format("{} pipelines created (the driver does not say which it found)", s.pipelines_created);
  if (!s.enabled) return fmt::format("pipeline cache off; {} pipelines created", s.pipelines_created);
  return s.loaded ? fmt::format("pipeline cache file loaded ({} KB): {}", (s.loaded_bytes + 1023) / 1024, hits)
                  : fmt::format("no pipeline cache file yet (a cold start): {}", hits);
}

std::unique_ptr<CommandStream> VulkanDevice::record() { return std::make_unique<VulkanCommandStream>(ctx_); }

std::unique_ptr<Fence> VulkanDevice::submit(CommandStream& s) {
  auto* vs = dynamic_cast<VulkanCommandStream*>(&s);
  if (!vs) throw Error(fmt::format("submit on {}: the stream was not recorded by a Vulkan device", ctx_->id()));
  if (&vs->context() != ctx_.get())
    throw Error(fmt::format("submit on {}: the stream was recorded on {}", ctx_->id(), vs->context().id()));
  return std::make_unique<VulkanFence>(vs->submit());
}

void VulkanDevice::wait_idle() { ctx_->wait_idle(); }

}  // namespace spire::rt::vulkan
