// The logical device and what every object made from it shares: queue, fences, pipeline cache, the command
// buffer for synchronous transfers. Buffers, kernels and streams hold it by shared_ptr, so the VkDevice lives
// until the last of them is gone, whatever order the caller drops them in.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/vulkan/vulkan_api.h"
#include "runtime/vulkan/vulkan_device_info.h"
#include "runtime/vulkan/vulkan_memory.h"

namespace spire::rt::vulkan {

struct Pipeline;

struct Context {
  PhysicalDeviceFacts facts;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  // SPIRE_VULKAN_FORCE_STAGING=1 at open: device-local buffers are never mapped, so transfers take the staging
  // path that discrete GPUs need, even on lavapipe or an integrated GPU where all memory is host-visible.
  bool force_staging = false;

  const DeviceInfo& info() const { return facts.info; }
  const std::string& id() const { return facts.info.id; }

  // Creates the logical device with the features facts.info.features names (after masking).
  static std::shared_ptr<Context> create(PhysicalDeviceFacts facts);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Queue access is externally synchronized in Vulkan: every submit and wait goes through these.
  void submit(const VkSubmitInfo& si, VkFence fence);
  void wait_idle();

  // Fences are recycled: a replayed stream should not create one per submission.
  VkFence acquire_fence();
  void recycle_fence(VkFence f);  // f must be signaled or never submitted

  // Records with `record` into a one-time command buffer, submits and waits. For synchronous transfers.
  void run_now(const std::function<void(VkCommandBuffer)>& record);
  // A host-visible staging buffer of at least `bytes` (grown on demand); use only inside transfer_mutex.
  Allocation& staging(uint64_t bytes);
  std::mutex transfer_mutex;

  // Pipelines by SPIR-V words, so compiling the same kernel again costs a map lookup.
  std::mutex pipeline_mutex;
  std::map<std::vector<uint32_t>, std::shared_ptr<Pipeline>> pipelines;

 private:
  Context() = default;
  std::mutex queue_mutex_;
  std::mutex fence_mutex_;
  std::vector<VkFence> free_fences_;
  VkCommandPool transfer_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer transfer_cmd_ = VK_NULL_HANDLE;
  VkFence transfer_fence_ = VK_NULL_HANDLE;
  Allocation staging_;
};

}  // namespace spire::rt::vulkan
