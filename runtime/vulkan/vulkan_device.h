// rt::Device for Vulkan: ties the context, buffers, kernels and streams of one logical device together.
//
// Environment, read when the instance is created (validation) or when a device is listed or opened (the rest):
//   SPIRE_VULKAN_VALIDATION=1     Khronos validation layer on; every warning/error printed and counted
//                                 (vulkan_validation.h); =sync adds synchronization validation.
//   SPIRE_MASK_FEATURES=a,b       hide kir features (float64, float16, int64, atomic-add-f32, ...) from a device,
//                                 to check portability on a device that has them.
//   SPIRE_VULKAN_FORCE_STAGING=1  never map device-local memory: transfers take the discrete-GPU staging path.
//   SPIRE_VULKAN_VERBOSE=1        say why Vulkan is unavailable (no loader, no driver) instead of staying quiet.
//   SPIRE_NO_DISK_CACHE=1         do not load or save the pipeline cache in spire's cache folder
//                                 (vulkan_pipeline_cache.h; the folder is runtime/cache_dir.h's: SPIRE_CACHE_DIR,
//                                 XDG_CACHE_HOME, HOME).
//
// Thread safety: a Device may be used from several threads (allocation, compilation, transfers, submission are
// synchronized); one CommandStream must be recorded by one thread at a time.
#pragma once

#include <memory>
#include <mutex>
#include <optional>

#include "runtime/device.h"
#include "runtime/vulkan/vulkan_context.h"

namespace spire::rt::vulkan {

class CudaBridge;

class VulkanDevice final : public Device {
 public:
  explicit VulkanDevice(std::shared_ptr<Context> ctx);
  ~VulkanDevice() override;
  const DeviceInfo& info() const override { return ctx_->info(); }
  SyncCounts sync_counts() const override { return ctx_->sync_counts(); }

  std::shared_ptr<Buffer> alloc(uint64_t bytes, Memory memory) override;
  void upload(Buffer& dst, const void* src, uint64_t bytes, uint64_t offset) override;
  void download(const Buffer& src, void* dst, uint64_t bytes, uint64_t offset) override;
  void fill(Buffer& dst, uint32_t pattern) override;
  std::shared_ptr<Kernel> load(const KernelBinary& binary) override;
  std::unique_ptr<CommandStream> record() override;
  std::unique_ptr<Fence> submit(CommandStream& s) override;
  void wait_idle() override;
  // Through CUDA memory on the same GPU (vulkan_cuda_bridge.h), opened at the first use; InvalidUse where there is
  // none. Copies in land before the next submission (or transfer) runs; copies out by signal_stream or wait_idle.
  void copy_from_address(Buffer& dst, uint64_t address, uint64_t bytes, uint64_t offset) override;
  void copy_to_address(const Buffer& src, uint64_t address, uint64_t bytes, uint64_t offset) override;
  void wait_for_stream(uint64_t stream) override;
  void signal_stream(uint64_t stream) override;
  // The CUDA ordinal of this GPU where values can be exchanged with CUDA memory (rt::cuda_peer).
  std::optional<int> cuda_peer() const;
  // How the exchanges with CUDA memory are ordered against CUDA's streams (CudaBridge::ordering); opens the bridge,
  // so InvalidUse where there is none.
  std::string cuda_ordering();

  const std::shared_ptr<Context>& context() const { return ctx_; }
  // What the on-disk pipeline cache did (loaded from disk, pipelines created), for tests and diagnostics.
  PipelineCacheStats pipeline_cache_stats() const { return ctx_->pipeline_cache().stats(); }
  std::string kernel_cache_summary() const override;

 private:
  CudaBridge& bridge();
  // The bridge where one is open (copies may be queued in it), else null.
  CudaBridge* open_bridge();

  std::shared_ptr<Context> ctx_;
  std::mutex bridge_mutex_;
  std::unique_ptr<CudaBridge> bridge_;
};

}  // namespace spire::rt::vulkan
