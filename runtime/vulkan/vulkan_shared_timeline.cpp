#include "runtime/vulkan/vulkan_shared_timeline.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "runtime/cuda/cuda_driver.h"

namespace spire::rt::vulkan {

namespace {

// Submissions in flight at once: a call hands over twice, and the host waits for a slot only when it comes round
// again, by which time its submission has long run.
constexpr size_t kSlots = 4;

}  // namespace

std::string SharedTimeline::unavailable(const Context& ctx) {
  const char* host = std::getenv("SPIRE_VULKAN_CUDA_HOST_ORDER");
  if (host && std::strcmp(host, "1") == 0) return "SPIRE_VULKAN_CUDA_HOST_ORDER=1";
  if (!ctx.facts.has_shared_timeline || !ctx.fn.vkGetSemaphoreFdKHR)
    return fmt::format("{} ({}) cannot export a timeline semaphore (timelineSemaphore and VK_KHR_external_semaphore_fd)",
                       ctx.id(), ctx.info().name);
  const cuda::Driver& d = cuda::driver();
  if (!d.ok) return d.problem;
  if (!d.api.has_external_semaphores())
    return fmt::format("the {} has no external semaphore entry points", cuda::driver_version_text(d.version));
  return "";
}

SharedTimeline::SharedTimeline(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {
  const DeviceFunctions& fn = ctx_->fn;
  VkExportSemaphoreCreateInfo exported{VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO};
  exported.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  type.pNext = &exported;
  VkSemaphoreCreateInfo ci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  ci.pNext = &type;
  check(fn.vkCreateSemaphore(ctx_->device, &ci, nullptr, &semaphore_), "vkCreateSemaphore", ctx_->id());
  try {
    VkSemaphoreGetFdInfoKHR gi{VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR};
    gi.semaphore = semaphore_;
    gi.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
    int fd = -1;
    check(fn.vkGetSemaphoreFdKHR(ctx_->device, &gi, &fd), "vkGetSemaphoreFdKHR", ctx_->id());
    cuda::CudaExternalSemaphoreHandleDesc desc{};
    desc.type = cuda::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
    desc.handle.fd = fd;
    const cuda::CUresult imported = cuda::driver().api.cuImportExternalSemaphore(&imported_, &desc);
    if (imported != cuda::CUDA_SUCCESS) ::close(fd);  // imported, the driver owns the descriptor
    cuda_check(imported, "cuImportExternalSemaphore");

    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pi.queueFamilyIndex = ctx_->facts.queue_family;
    check(fn.vkCreateCommandPool(ctx_->device, &pi, nullptr, &pool_), "vkCreateCommandPool", ctx_->id());
    slots_.resize(kSlots);
    for (Slot& s : slots_) {
      VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
      ai.commandPool = pool_;
      ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      ai.commandBufferCount = 1;
      check(fn.vkAllocateCommandBuffers(ctx_->device, &ai, &s.cmd), "vkAllocateCommandBuffers", ctx_->id());
      s.fence = ctx_->acquire_fence();
    }
  } catch (...) {
    for (Slot& s : slots_)
      if (s.fence) ctx_->recycle_fence(s.fence);
    if (pool_) fn.vkDestroyCommandPool(ctx_->device, pool_, nullptr);
    if (imported_) cuda::driver().api.cuDestroyExternalSemaphore(imported_);
    fn.vkDestroySemaphore(ctx_->device, semaphore_, nullptr);
    throw;
  }
}

SharedTimeline::~SharedTimeline() {
  try {
    finish();
  } catch (...) {  // a destructor cannot report; the device is lost then anyway
  }
  for (Slot& s : slots_) ctx_->recycle_fence(s.fence);
  ctx_->fn.vkDestroyCommandPool(ctx_->device, pool_, nullptr);  // frees the command buffers
  cuda::driver().api.cuDestroyExternalSemaphore(imported_);
  ctx_->fn.vkDestroySemaphore(ctx_->device, semaphore_, nullptr);
}

void SharedTimeline::cuda_check(cuda::CUresult r, const char* call) const {
  cuda::check(cuda::driver(), r, ctx_->id() + " (its CUDA side)", call);
}

void SharedTimeline::cuda_signal(cuda::CUstream stream) {
  std::lock_guard lock(mutex_);
  if (last_vulkan_ > last_cuda_) {
    cuda::CudaExternalSemaphoreWaitParams wait{};
    wait.params.fence.value = last_vulkan_;
    cuda_check(cuda::driver().api.cuWaitExternalSemaphoresAsync(&imported_, &wait, 1, stream),
               "cuWaitExternalSemaphoresAsync");
  }
  cuda::CudaExternalSemaphoreSignalParams signal{};
  signal.params.fence.value = value_ + 1;
  cuda_check(cuda::driver().api.cuSignalExternalSemaphoresAsync(&imported_, &signal, 1, stream),
             "cuSignalExternalSemaphoresAsync");
  last_cuda_ = ++value_;
}

void SharedTimeline::cuda_wait(cuda::CUstream stream) {
  std::lock_guard lock(mutex_);
  if (last_vulkan_ == 0) return;
  cuda::CudaExternalSemaphoreWaitParams wait{};
  wait.params.fence.value = last_vulkan_;
  cuda_check(cuda::driver().api.cuWaitExternalSemaphoresAsync(&imported_, &wait, 1, stream),
             "cuWaitExternalSemaphoresAsync");
}

void SharedTimeline::vulkan_submit(const std::function<void(VkCommandBuffer)>& record) {
  std::lock_guard lock(mutex_);
  const DeviceFunctions& fn = ctx_->fn;
  Slot& s = slots_[next_slot_];
  next_slot_ = (next_slot_ + 1) % slots_.size();
  if (s.submitted) {
    check(ctx_->wait_for_fence(s.fence), "vkWaitForFences", ctx_->id());
    check(fn.vkResetFences(ctx_->device, 1, &s.fence), "vkResetFences", ctx_->id());
    s.submitted = false;
  }
  check(fn.vkResetCommandBuffer(s.cmd, 0), "vkResetCommandBuffer", ctx_->id());
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(fn.vkBeginCommandBuffer(s.cmd, &bi), "vkBeginCommandBuffer", ctx_->id());
  record(s.cmd);
  check(fn.vkEndCommandBuffer(s.cmd), "vkEndCommandBuffer", ctx_->id());

  const uint64_t wait_value = last_cuda_, signal_value = value_ + 1;
  VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  values.waitSemaphoreValueCount = 1;
  values.pWaitSemaphoreValues = &wait_value;
  values.signalSemaphoreValueCount = 1;
  values.pSignalSemaphoreValues = &signal_value;
  const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.pNext = &values;
  si.waitSemaphoreCount = 1;
  si.pWaitSemaphores = &semaphore_;
  si.pWaitDstStageMask = &wait_stage;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &s.cmd;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &semaphore_;
  ctx_->submit(si, s.fence);
  s.submitted = true;
  last_vulkan_ = ++value_;
}

void SharedTimeline::finish() {
  std::lock_guard lock(mutex_);
  for (Slot& s : slots_) {
    if (!s.submitted) continue;
    check(ctx_->wait_for_fence(s.fence), "vkWaitForFences", ctx_->id());
    check(ctx_->fn.vkResetFences(ctx_->device, 1, &s.fence), "vkResetFences", ctx_->id());
    s.submitted = false;
  }
}

}  // namespace spire::rt::vulkan
