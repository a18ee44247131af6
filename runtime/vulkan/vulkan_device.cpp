#include "runtime/vulkan/vulkan_device.h"

#include <fmt/format.h>

#include "runtime/cuda_peer.h"
#include "runtime/vulkan/vulkan_buffer.h"
#include "runtime/vulkan/vulkan_command_stream.h"
#include "runtime/vulkan/vulkan_cuda_bridge.h"
#include "runtime/vulkan/vulkan_kernel.h"

namespace spire::rt::vulkan {

VulkanDevice::VulkanDevice(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}
VulkanDevice::~VulkanDevice() = default;

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
  if (CudaBridge* b = open_bridge()) b->flush_in();
  vulkan::upload(*ctx_, vulkan_buffer(&dst, *ctx_, "upload"), src, bytes, offset);
}

void VulkanDevice::download(const Buffer& src, void* dst, uint64_t bytes, uint64_t offset) {
  if (CudaBridge* b = open_bridge()) b->flush_in();
  vulkan::download(*ctx_, vulkan_buffer(&src, *ctx_, "download"), dst, bytes, offset);
}

void VulkanDevice::fill(Buffer& dst, uint32_t pattern) {
  if (CudaBridge* b = open_bridge()) b->flush_in();
  vulkan::fill(*ctx_, vulkan_buffer(&dst, *ctx_, "fill"), pattern);
}

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
  if (CudaBridge* b = open_bridge()) b->flush_in();  // copies from CUDA addresses queued for this submission
  return std::make_unique<VulkanFence>(vs->submit());
}

void VulkanDevice::wait_idle() {
  if (CudaBridge* b = open_bridge()) b->finish();
  ctx_->wait_idle();
}

CudaBridge& VulkanDevice::bridge() {
  std::lock_guard lock(bridge_mutex_);
  if (!bridge_) bridge_ = std::make_unique<CudaBridge>(ctx_);
  return *bridge_;
}

CudaBridge* VulkanDevice::open_bridge() {
  std::lock_guard lock(bridge_mutex_);
  return bridge_.get();
}

namespace {

// The Vulkan buffer behind `b`, whose `bytes` from `offset` on a copy to or from a CUDA address (`what`) touches.
const VulkanBuffer& address_copy_range(const Buffer& b, const Context& ctx, uint64_t bytes, uint64_t offset,
                                       const char* what) {
  const VulkanBuffer& v = vulkan_buffer(&b, ctx, what);
  if (offset > v.size() || bytes > v.size() - offset)
    throw InvalidUse(fmt::format("{}: {} of {} bytes at offset {} overruns a buffer of {} bytes", ctx.id(), what, bytes,
                                 offset, v.size()));
  return v;
}

}  // namespace

void VulkanDevice::copy_from_address(Buffer& dst, uint64_t address, uint64_t bytes, uint64_t offset) {
  bridge().copy_from_address(address_copy_range(dst, *ctx_, bytes, offset, "copy_from_address"), address, bytes, offset);
}

void VulkanDevice::copy_to_address(const Buffer& src, uint64_t address, uint64_t bytes, uint64_t offset) {
  bridge().copy_to_address(address_copy_range(src, *ctx_, bytes, offset, "copy_to_address"), address, bytes, offset);
}

void VulkanDevice::wait_for_stream(uint64_t stream) { bridge().wait_for_stream(stream); }

void VulkanDevice::signal_stream(uint64_t stream) { bridge().signal_stream(stream); }

std::string VulkanDevice::cuda_ordering() { return bridge().ordering(); }

std::optional<int> VulkanDevice::cuda_peer() const { return find_cuda_peer(*ctx_).ordinal; }

}  // namespace spire::rt::vulkan

namespace spire::rt {

std::optional<int> cuda_peer(const Device& device) {
  if (device.info().backend == Backend::Cuda) return device.info().index;
  if (auto* v = dynamic_cast<const vulkan::VulkanDevice*>(&device)) return v->cuda_peer();
  return std::nullopt;
}

std::string cuda_ordering(Device& device) {
  if (!cuda_peer(device)) return "";
  if (device.info().backend == Backend::Cuda) return "the CUDA device's own streams";
  return dynamic_cast<vulkan::VulkanDevice&>(device).cuda_ordering();
}

}  // namespace spire::rt
