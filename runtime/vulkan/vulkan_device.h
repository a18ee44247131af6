// rt::Device for Vulkan: ties the context, buffers, kernels and streams of one logical device together.
#pragma once

#include <memory>

#include "runtime/device.h"
#include "runtime/vulkan/vulkan_context.h"

namespace spire::rt::vulkan {

class VulkanDevice final : public Device {
 public:
  explicit VulkanDevice(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}
  const DeviceInfo& info() const override { return ctx_->info(); }

  std::shared_ptr<Buffer> alloc(uint64_t bytes, Memory memory) override;
  void upload(Buffer& dst, const void* src, uint64_t bytes, uint64_t offset) override;
  void download(const Buffer& src, void* dst, uint64_t bytes, uint64_t offset) override;
  void fill(Buffer& dst, uint32_t pattern) override;
  std::shared_ptr<Kernel> compile(const kir::Kernel& k) override;
  std::unique_ptr<CommandStream> record() override;
  std::unique_ptr<Fence> submit(CommandStream& s) override;
  void wait_idle() override;

 private:
  std::shared_ptr<Context> ctx_;
};

}  // namespace spire::rt::vulkan
