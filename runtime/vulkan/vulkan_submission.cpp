#include "runtime/vulkan/vulkan_submission.h"

#include <cstdio>

namespace spire::rt::vulkan {

Submission::~Submission() {
  if (!done_) {
    // A destructor cannot throw; a lost device is reported and the fence abandoned rather than reused.
    VkResult r = ctx_->wait_for_fence(fence_);
    if (r != VK_SUCCESS) {
      std::fprintf(stderr, "spire: waiting for a submission on %s failed with %s\n", ctx_->id().c_str(),
                   std::string(result_name(r)).c_str());
      return;
    }
  }
  ctx_->recycle_fence(fence_);
}

void Submission::wait() {
  if (done_) return;
  check(ctx_->wait_for_fence(fence_), "vkWaitForFences", ctx_->id());
  done_ = true;
}

bool Submission::ready() {
  if (done_) return true;
  VkResult r = ctx_->fn.vkGetFenceStatus(ctx_->device, fence_);
  if (r == VK_NOT_READY) return false;
  check(r, "vkGetFenceStatus", ctx_->id());
  done_ = true;
  return true;
}

}  // namespace spire::rt::vulkan
