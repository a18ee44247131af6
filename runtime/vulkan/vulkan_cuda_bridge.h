// A Vulkan device exchanging values with CUDA memory on the same GPU without the host: Device::copy_from_address,
// copy_to_address, wait_for_stream and signal_stream on vulkan:N, so that a model spire runs on Vulkan reads and writes
// PyTorch's CUDA tensors in place (spire/torch/segment_runner.py), as it does on cuda:N.
//
// Vulkan exports a buffer's memory by a file descriptor (VK_KHR_external_memory_fd) and the CUDA driver imports it
// (cuImportExternalMemory), so the same bytes have a CUDA address. A copy in is then a CUDA copy from the caller's
// address into such a buffer and a Vulkan copy from there into the destination; a copy out the reverse.
//
// Each hand-over between the two APIs costs, so the bridge hands over twice a call, whatever its number of values:
// the copies in are queued on the CUDA side (behind the caller's stream, on the device) and carried over to Vulkan
// together at the next Vulkan submission; the copies out are queued on the Vulkan side and carried over together when
// the caller's stream is signalled or at wait_idle. How the two sides are ordered at a hand-over:
//   - on the device, where both drivers share a timeline semaphore (vulkan_shared_timeline.h): neither the caller
//     nor the bridge waits on the host, and a call returns with its work queued;
//   - else by the host: it waits for one side before queueing the other's work. On an H200 a hand-over then took
//     about 150 us (a copy of 32 KB each way: 11 us CUDA alone, 25 us Vulkan alone, 340 us alternating).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_driver_api.h"
#include "runtime/vulkan/vulkan_buffer.h"
#include "runtime/vulkan/vulkan_context.h"
#include "runtime/vulkan/vulkan_shared_timeline.h"

namespace spire::rt::vulkan {

// The ordinal (CUDA's numbering, as PyTorch's cuda:N) of the CUDA device that is ctx's GPU, when the CUDA driver has
// one and both sides can share memory; else why not.
struct CudaPeer {
  std::optional<int> ordinal;
  std::string problem;
};
CudaPeer find_cuda_peer(const Context& ctx);

class CudaBridge {
 public:
  // Throws InvalidUse naming what is missing (find_cuda_peer's problem).
  explicit CudaBridge(std::shared_ptr<Context> ctx);
  ~CudaBridge();
  CudaBridge(const CudaBridge&) = delete;
  CudaBridge& operator=(const CudaBridge&) = delete;

  int cuda_ordinal() const { return ordinal_; }
  // Copies in queued after this start once everything queued on `stream` (a CUstream of the peer's primary context)
  // so far is done: ordered on the CUDA device, no host wait.
  void wait_for_stream(uint64_t stream);
  // Queues `bytes` from CUDA address `address` into dst at `offset`; they land before the next Vulkan submission runs
  // (flush_in).
  void copy_from_address(const VulkanBuffer& dst, uint64_t address, uint64_t bytes, uint64_t offset);
  // Queues `bytes` of src from `offset` to CUDA address `address`, taken after every Vulkan submission before it; they
  // land by signal_stream's or flush_out's end.
  void copy_to_address(const VulkanBuffer& src, uint64_t address, uint64_t bytes, uint64_t offset);
  // Carries the queued copies in over to Vulkan (ordered by the host: it waits for the CUDA side, then for Vulkan's
  // copies). Called before every Vulkan submission of the device.
  void flush_in();
  // Carries the queued copies out over to CUDA and makes `stream` wait for them on the device; with none queued,
  // `stream` waits for everything submitted to the Vulkan device so far (ordered by the host: it waits for the Vulkan
  // device to be idle).
  void signal_stream(uint64_t stream);
  // How the two sides are ordered: "a shared timeline semaphore", or "the host (why the semaphore is not used)".
  const std::string& ordering() const { return ordering_; }
  // Every queued copy landed: the host waits for both sides (Device::wait_idle).
  void finish();

 private:
  // A Vulkan buffer of exported memory and its CUDA address, filled from `used` on.
  struct Shared {
    std::unique_ptr<VulkanBuffer> buffer;
    cuda::CUexternalMemory imported = nullptr;
    cuda::CUdeviceptr address = 0;
    uint64_t used = 0;
  };
  struct CopyIn {
    VkBuffer dst;
    uint64_t from, to, bytes;  // offsets in the shared buffer and in dst
  };
  struct CopyOut {
    VkBuffer src;
    uint64_t from, to, bytes;  // offsets in src and in the shared buffer
    uint64_t address;
  };
  // Where `bytes` more go in `s`: its `used` offset, after growing it (by doubling) where they do not fit; `drain`
  // first empties it of queued copies.
  uint64_t reserve(Shared& s, uint64_t bytes, void (CudaBridge::*drain)());
  void flush_in_locked();
  // Records the copies between the shared buffer and Vulkan buffers, between barriers that order them after every
  // access submitted before and before every access submitted after.
  void record_copies_in(VkCommandBuffer cmd) const;
  void record_copies_out(VkCommandBuffer cmd) const;
  // to_stream: `stream` waits for the CUDA copies on the device; else the host waits for them.
  void flush_out_locked(cuda::CUstream stream, bool to_stream);
  void drain_out() { flush_out_locked(nullptr, /*to_stream=*/false); }
  void import(Shared& s, uint64_t bytes);
  void release(Shared& s);
  void make_current();
  void cuda_check(cuda::CUresult r, const char* call) const;

  std::shared_ptr<Context> ctx_;
  int ordinal_ = -1;
  cuda::CUdevice device_ = 0;
  cuda::CUcontext cuda_ctx_ = nullptr;
  cuda::CUstream stream_ = nullptr;  // the bridge's CUDA copies
  cuda::CUevent event_ = nullptr;    // orders streams on the device
  Shared in_, out_;
  std::unique_ptr<SharedTimeline> timeline_;  // null: the host orders the two sides
  std::string ordering_;
  std::vector<CopyIn> copies_in_;
  std::vector<CopyOut> copies_out_;
  std::recursive_mutex mutex_;
};

}  // namespace spire::rt::vulkan
