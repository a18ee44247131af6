// One submission of a command stream to the queue, tracked by a (recycled) fence. Shared by the stream (which
// waits on it before submitting again) and by the rt::Fence returned to the caller.
#pragma once

#include <atomic>
#include <memory>

#include "runtime/device.h"
#include "runtime/vulkan/vulkan_context.h"

namespace spire::rt::vulkan {

class Submission {
 public:
  Submission(std::shared_ptr<Context> ctx, VkFence fence) : ctx_(std::move(ctx)), fence_(fence) {}
  ~Submission();  // waits for completion: the fence and the recorded work must not be released in flight
  Submission(const Submission&) = delete;
  Submission& operator=(const Submission&) = delete;

  void wait();
  bool ready();

 private:
  std::shared_ptr<Context> ctx_;
  VkFence fence_;
  std::atomic<bool> done_{false};
};

class VulkanFence final : public Fence {
 public:
  explicit VulkanFence(std::shared_ptr<Submission> s) : s_(std::move(s)) {}
  void wait() override { s_->wait(); }
  bool ready() override { return s_->ready(); }

 private:
  std::shared_ptr<Submission> s_;
};

}  // namespace spire::rt::vulkan
