// The logical device and what every object made from it shares: its function table, queue, fences, pipeline
// cache, the command buffer for synchronous transfers. Buffers, kernels and streams hold it by shared_ptr, so the
// context lives until the last of them is gone, whatever order the caller drops them in.
//
// A context either created its VkDevice (open()) or adopted the host program's (vulkan_external.h). An adopted
// context destroys only what spire created on that device; the VkDevice, its queue and the instance stay the
// host's, and every use of the shared queue goes through the host's lock when it gave one.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/handle_pool.h"
#include "runtime/vulkan/vulkan_api.h"
#include "runtime/vulkan/vulkan_device_info.h"
#include "runtime/vulkan/vulkan_functions.h"
#include "runtime/vulkan/vulkan_memory.h"
#include "runtime/vulkan/vulkan_pipeline_cache.h"

namespace spire::rt::vulkan {

struct Pipeline;

// How spire takes the host's queue lock around each use of an adopted queue (both null: no lock).
struct QueueLock {
  void (*lock)(void* user_data) = nullptr;
  void (*unlock)(void* user_data) = nullptr;
  void* user_data = nullptr;
};

struct Context {
  PhysicalDeviceFacts facts;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  DeviceFunctions fn;  // every device-level call goes through this table (vulkan_functions.h says why)
  // SPIRE_VULKAN_FORCE_STAGING=1 at open: device-local buffers are never mapped, so transfers take the staging
  // path that discrete GPUs need, even on lavapipe or an integrated GPU where all memory is host-visible.
  bool force_staging = false;
  // SPIRE_VULKAN_PIPELINE_STATS=1 at create, on a device with VK_KHR_pipeline_executable_properties: pipelines
  // capture their statistics and print them (vulkan_pipeline_stats.h).
  bool pipeline_stats = false;
  // Pipelines are created with storage buffer robustness disabled (VK_EXT_pipeline_robustness; vulkan_kernel.cpp).
  bool unchecked_buffers = false;
  // The device runs Vulkan 1.3 (spire's own devices where the driver and loader offer it): pipelines are created with
  // VkPipelineCreationFeedbackCreateInfo, which says whether the pipeline cache held them (the start-up profile).
  bool creation_feedback = false;
  // hostQueryReset is enabled (spire's own devices where offered; an adopted device's features are the host's, so
  // not there): streams reset their timestamps from the host before each submission.
  bool host_query_reset = false;
  // SPIRE_VULKAN_PIPELINE_IR=<dir> at device open (where the device offers the extension): every pipeline is created
  // capturing the driver's internal representations, which are written into this directory (vulkan_pipeline_stats.h).
  std::string pipeline_ir_dir;

  const DeviceInfo& info() const { return facts.info; }
  const std::string& id() const { return facts.info.id; }

  // Creates the logical device with the features facts.info.features names (after masking).
  static std::shared_ptr<Context> create(PhysicalDeviceFacts facts);
  // Wraps the host program's device and queue; facts.info.features must name only what the host enabled.
  static std::shared_ptr<Context> adopt(PhysicalDeviceFacts facts, VkDevice device, VkQueue queue, QueueLock lock);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  bool owns_device() const { return owns_device_; }

  // Queue access is externally synchronized in Vulkan: every submit and wait goes through these.
  void submit(const VkSubmitInfo& si, VkFence fence);
  void wait_idle();
  // Waits for one fence and returns vkWaitForFences' result unchecked (destructors wait too, and cannot throw).
  // Every fence wait goes through it, so sync_counts() counts them all.
  [[nodiscard]] VkResult wait_for_fence(VkFence fence);
  // Device::sync_counts: queue submissions and host waits so far.
  SyncCounts sync_counts() const { return {submits_.load(), waits_.load()}; }

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
  // The on-disk VkPipelineCache every pipeline is created with (its handle is null when disk caching is off).
  PipelineCache& pipeline_cache() { return *pipeline_cache_; }

 private:
  Context() = default;
  // Everything after the VkDevice exists: SPIRE_VULKAN_FORCE_STAGING, the function table, the transfer command
  // buffer and fence, the pipeline cache.
  void finish_setup(PFN_vkGetDeviceProcAddr get_device_proc_addr);
  // Holds the queue: spire's own mutex, then the host's lock when it gave one.
  class QueueGuard;

  bool owns_device_ = true;
  QueueLock host_queue_lock_;
  std::mutex queue_mutex_;
  HandlePool<VkFence> fences_;
  std::atomic<uint64_t> submits_{0}, waits_{0};
  VkCommandPool transfer_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer transfer_cmd_ = VK_NULL_HANDLE;
  VkFence transfer_fence_ = VK_NULL_HANDLE;
  Allocation staging_;
  std::unique_ptr<PipelineCache> pipeline_cache_;
};

}  // namespace spire::rt::vulkan
