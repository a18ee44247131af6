// spire::rt::Device on the CUDA driver.
//
// Environment:
//   SPIRE_NO_DISK_CACHE=1   do not load or store compiled modules in spire's cache folder (cuda_module_cache.h;
//                           the folder is runtime/cache_dir.h's: SPIRE_CACHE_DIR, XDG_CACHE_HOME, HOME).
//   SPIRE_CUDA_GRAPHS=0     replay recorded streams as launch lists instead of CUDA graphs.
//
// All work of a device runs in order on one non-blocking stream of its primary context: uploads, downloads
// and fills of device memory are enqueued there and waited for (those of host-visible memory wait for the
// stream, then the host does them in place), and submit() enqueues a recorded stream (a CUDA graph
// launch, or its prepared launch list) followed by a fence event. Methods may be called from any thread;
// one device is not meant to be driven by several threads at once, except compile(), which is thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_module_cache.h"
#include "runtime/cuda/cuda_resources.h"

namespace spire::rt::cuda {

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)), module_cache_(*ctx_) {}
  ~CudaDevice() override;

  const DeviceInfo& info() const override { return ctx_->info(); }
  SyncCounts sync_counts() const override { return ctx_->sync_counts(); }
  std::shared_ptr<Buffer> alloc(uint64_t bytes, Memory memory = Memory::DeviceLocal) override;
  void upload(Buffer& dst, const void* src, uint64_t bytes, uint64_t offset = 0) override;
  void download(const Buffer& src, void* dst, uint64_t bytes, uint64_t offset = 0) override;
  void fill(Buffer& dst, uint32_t pattern) override;
  // cuMemcpyAsync on the device's stream (unified addressing: `address` may be device or pinned host memory).
  void copy_from_address(Buffer& dst, uint64_t address, uint64_t bytes, uint64_t offset = 0) override;
  void copy_to_address(const Buffer& src, uint64_t address, uint64_t bytes, uint64_t offset = 0) override;
  // An event recorded on one stream and waited for by the other (cuStreamWaitEvent): no host wait.
  void wait_for_stream(uint64_t stream) override;
  void signal_stream(uint64_t stream) override;
  std::shared_ptr<Kernel> load(const KernelBinary& binary) override;
  std::unique_ptr<CommandStream> record() override;
  std::unique_ptr<Fence> submit(CommandStream& s) override;
  void wait_idle() override;

  // Modules loaded so far: one per distinct PTX text (compiling the same kernel again reuses its module).
  size_t loaded_module_count() const;
  // What the on-disk module cache did (hits, linker compilations, files stored).
  ModuleCacheStats module_cache_stats() const { return module_cache_.stats(); }
  std::string kernel_cache_summary() const override;

 private:
  const CudaBuffer& own(const Buffer& b, const char* what) const;
  // own(b), with `bytes` at `offset` checked to lie inside it.
  const CudaBuffer& own_range(const Buffer& b, uint64_t bytes, uint64_t offset, const char* what) const;
  // copy_from_address (into_buffer) and copy_to_address: the range checked, then one copy on the device's stream.
  void copy_with_address(const Buffer& buffer, uint64_t address, uint64_t bytes, uint64_t offset, bool into_buffer);
  std::shared_ptr<Buffer> alloc_host_visible(uint64_t bytes);
  // `later` runs what is enqueued on it from now on after what is enqueued on `earlier` so far.
  void order_streams(CUstream earlier, CUstream later, const char* what);
  std::shared_ptr<Module> load_module(const std::string& ptx, const KernelBinary& binary);

  std::shared_ptr<Context> ctx_;
  ModuleDiskCache module_cache_;
  mutable std::mutex modules_mutex_;
  std::unordered_map<std::string, std::shared_ptr<Module>> modules_;  // by PTX text
};

}  // namespace spire::rt::cuda
