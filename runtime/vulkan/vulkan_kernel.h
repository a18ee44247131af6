// Kernels loaded on a Vulkan device: a SPIR-V module (backends/compile_kernel.h), then a compute pipeline whose layout is
// one storage-buffer binding per kernel buffer (set 0) and one push-constant range for the scalars.
#pragma once

#include <memory>

#include "runtime/device.h"
#include "runtime/vulkan/vulkan_context.h"

namespace spire::rt::vulkan {

// Owned by the context's cache (keyed by SPIR-V words) and by every kernel that uses it; both keep the context
// alive longer than the pipeline.
struct Pipeline {
  const Context* ctx = nullptr;
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0;
  uint32_t push_constant_bytes = 0;
  ~Pipeline();
};

class VulkanKernel final : public Kernel {
 public:
  VulkanKernel(std::shared_ptr<Context> ctx, KernelInterface ir, std::shared_ptr<Pipeline> pipeline)
      : ctx_(std::move(ctx)), ir_(std::move(ir)), pipeline_(std::move(pipeline)) {}
  const KernelInterface& interface() const override { return ir_; }
  const std::shared_ptr<Pipeline>& pipeline() const { return pipeline_; }
  const Context& context() const { return *ctx_; }

 private:
  std::shared_ptr<Context> ctx_;
  KernelInterface ir_;
  std::shared_ptr<Pipeline> pipeline_;
};

// Device::load for Vulkan: checks format, features and limits (MissingFeature / Error naming kernel and device)
// and builds or reuses the pipeline of the module.
std::shared_ptr<Kernel> load_kernel(const std::shared_ptr<Context>& ctx, const KernelBinary& binary);

}  // namespace spire::rt::vulkan
