// A Vulkan timeline semaphore that the CUDA driver imports (VK_KHR_external_semaphore_fd, cuImportExternalSemaphore),
// so that work on a Vulkan queue and work on CUDA streams of the same GPU wait for each other on the device, the host
// never waiting (vulkan_cuda_bridge.h hands values over this way where both drivers offer it).
//
// One counter orders both sides. A timeline's value may only grow, so every signal, from either side, first waits for
// the last value the other side signaled: the values then fire in the order they were given out, each side's in its
// own queue order and the two sides' alternating.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_driver_api.h"
#include "runtime/vulkan/vulkan_context.h"

namespace spire::rt::vulkan {

class SharedTimeline {
 public:
  // Why ctx and the CUDA driver cannot share a timeline ("" when they can): the device or the driver lacks the entry
  // points, or SPIRE_VULKAN_CUDA_HOST_ORDER=1 asks for the host's ordering.
  static std::string unavailable(const Context& ctx);
  // Creates the semaphore and imports it into the CUDA context current on this thread. Throws rt::Error naming the
  // call that failed.
  explicit SharedTimeline(std::shared_ptr<Context> ctx);
  ~SharedTimeline();  // waits for its Vulkan submissions; nothing queued may still wait for or signal it
  SharedTimeline(const SharedTimeline&) = delete;
  SharedTimeline& operator=(const SharedTimeline&) = delete;

  // CUDA: `stream` signals the next value once its work so far is done (after the last Vulkan value).
  void cuda_signal(cuda::CUstream stream);
  // CUDA: `stream`'s later work starts once the last value Vulkan signaled has fired.
  void cuda_wait(cuda::CUstream stream);
  // Vulkan: submits `record`'s commands once the last value CUDA signaled has fired, then signals the next value,
  // which also covers every submission to the queue before it. Returns without waiting.
  void vulkan_submit(const std::function<void(VkCommandBuffer)>& record);
  // The host waits for every Vulkan submission made here.
  void finish();

 private:
  struct Slot {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    bool submitted = false;
  };
  void cuda_check(cuda::CUresult r, const char* call) const;

  std::shared_ptr<Context> ctx_;
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
  cuda::CUexternalSemaphore imported_ = nullptr;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<Slot> slots_;  // a ring of command buffers, reused once their submission is done
  size_t next_slot_ = 0;
  uint64_t value_ = 0;        // the last value given out
  uint64_t last_cuda_ = 0;    // the last value CUDA was asked to signal
  uint64_t last_vulkan_ = 0;  // the last value Vulkan was asked to signal
  std::mutex mutex_;
};

}  // namespace spire::rt::vulkan
