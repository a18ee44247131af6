#include "runtime/vulkan/vulkan_context.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "runtime/vulkan/vulkan_instance.h"
#include "runtime/vulkan/vulkan_kernel.h"
#include "runtime/vulkan/vulkan_pipeline_stats.h"

namespace spire::rt::vulkan {

namespace {

// SPIRE_VULKAN_BUFFER_CHECKS=1 leaves the driver's bounds checks in (to measure what they cost, or to run a kernel
// suspected of straying past a buffer the way the driver would by default).
bool unchecked_buffers_requested() {
  const char* v = std::getenv("SPIRE_VULKAN_BUFFER_CHECKS");
  return !(v && std::string(v) == "1");
}

}  // namespace

std::shared_ptr<Context> Context::create(PhysicalDeviceFacts facts) {
  const std::string id = facts.info.id;
  if (facts.queue_family == ~0u) throw Error(fmt::format("{} ({}) has no compute queue", id, facts.info.name));
  std::shared_ptr<Context> ctx(new Context());
  ctx->facts = std::move(facts);
  const PhysicalDeviceFacts& f = ctx->facts;
  Features want = f.info.features;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = f.queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;

  // Enable exactly what the (masked) feature set promises, so a kernel that forgot to declare a feature
  // fails validation here as it would on a device without it.
  std::vector<const char*> extensions;
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  void** tail = &feats.pNext;
  feats.features.shaderFloat64 = want.has(Feature::Float64);
  feats.features.shaderInt64 = want.has(Feature::Int64);
  if (want.has(Feature::Float16) || want.has(Feature::BFloat16)) {  // both store 16-bit words
    storage16.storageBuffer16BitAccess = VK_TRUE;
    storage16.storagePushConstant16 = want.has(Feature::Float16) && f.has_push_constant_16bit;
    *tail = &storage16;
    tail = &storage16.pNext;
  }
  if (want.has(Feature::Float16)) {
    f16.shaderFloat16 = VK_TRUE;
    *tail = &f16;
    tail = &f16.pNext;
    if (!f.float16_int8_core) extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  }
  if (want.has(Feature::AtomicAddF32)) {
    atomic_float.shaderBufferFloat32AtomicAdd = VK_TRUE;
    *tail = &atomic_float;
    tail = &atomic_float.pNext;
    extensions.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  }
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceShaderBfloat16FeaturesKHR bf16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  if (want.has(Feature::CooperativeMatrix)) {  // what backends/spirv/spirv_backend.h says such modules use
    coop.cooperativeMatrix = VK_TRUE;
    bf16.shaderBFloat16Type = VK_TRUE;
    bf16.shaderBFloat16CooperativeMatrix = VK_TRUE;
    memory_model.vulkanMemoryModel = VK_TRUE;
    feats.features.shaderInt16 = VK_TRUE;
    *tail = &coop;
    coop.pNext = &bf16;
    bf16.pNext = &memory_model;
    tail = &memory_model.pNext;
    extensions.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    extensions.push_back(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
    if (!f.memory_model_core) extensions.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
  }
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV coop2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  if (want.has(Feature::WorkgroupMatrix)) {  // on top of the above (offered_features reports it only then)
    coop2.cooperativeMatrixWorkgroupScope = VK_TRUE;
    coop2.cooperativeMatrixFlexibleDimensions = VK_TRUE;
    coop2.cooperativeMatrixTensorAddressing = VK_TRUE;
    *tail = &coop2;
    tail = &coop2.pNext;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executables{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  const bool wants_executables = pipeline_statistics_requested() || !pipeline_ir_directory().empty();
  if (wants_executables && !f.has_pipeline_executable_properties)
    fmt::print(stderr, "spire: SPIRE_VULKAN_PIPELINE_STATS / _IR: {} ({}) lacks VK_KHR_pipeline_executable_properties; "
                       "no statistics or internal representations\n", id, f.info.name);
  if (wants_executables && f.has_pipeline_executable_properties) {
    executables.pipelineExecutableInfo = VK_TRUE;
    *tail = &executables;
    tail = &executables.pNext;
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    ctx->pipeline_stats = pipeline_statistics_requested();
    ctx->pipeline_ir_dir = pipeline_ir_directory();
  }
  // Storage buffer accesses without the bounds checks NVIDIA's driver otherwise compiles into every load and store
  // (a compare and a predicate each, robustBufferAccess or not): spire's kernels stay within their buffers (kir's
  // rule, checked by the poisoned-output tests), and a device spire creates never enables robustBufferAccess anyway.
  VkPhysicalDevicePipelineRobustnessFeaturesEXT robustness{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT};
  if (f.has_pipeline_robustness && unchecked_buffers_requested()) {
    robustness.pipelineRobustness = VK_TRUE;
    *tail = &robustness;
    tail = &robustness.pNext;
    extensions.push_back(VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME);
    ctx->unchecked_buffers = true;
  }
  if (f.has_portability_subset) extensions.push_back("VK_KHR_portability_subset");
  // Memory another API imports (vulkan_cuda_bridge.h); VK_KHR_external_memory itself is core in 1.1.
  if (f.has_external_memory_fd) extensions.push_back(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
  VkPhysicalDeviceHostQueryResetFeatures host_reset{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES};
  if (f.has_host_query_reset) {  // core in 1.2: no extension
    host_reset.hostQueryReset = VK_TRUE;
    *tail = &host_reset;
    tail = &host_reset.pNext;
  }
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  if (f.has_shared_timeline) {  // the semaphore CUDA waits on and signals (vulkan_cuda_bridge.h); core in 1.2
    timeline.timelineSemaphore = VK_TRUE;
    *tail = &timeline;
    tail = &timeline.pNext;
    extensions.push_back(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
  }

  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.pNext = &feats;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qi;
  ci.enabledExtensionCount = uint32_t(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  const InstanceFunctions& vki = f.instance_functions;
  check(vki.vkCreateDevice(f.handle, &ci, nullptr, &ctx->device), "vkCreateDevice", id);
  ctx->finish_setup(vki.vkGetDeviceProcAddr);  // on a throw, ~Context destroys the device again
  ctx->fn.vkGetDeviceQueue(ctx->device, f.queue_family, 0, &ctx->queue);
  ctx->host_query_reset = f.has_host_query_reset && ctx->fn.vkResetQueryPool;
  // The device's version is the lower of the instance's and the physical device's.
  ctx->creation_feedback = instance() && std::min(instance()->api_version, f.api_version) >= VK_API_VERSION_1_3;
  return ctx;
}

std::shared_ptr<Context> Context::adopt(PhysicalDeviceFacts facts, VkDevice device, VkQueue queue, QueueLock lock) {
  std::shared_ptr<Context> ctx(new Context());
  ctx->facts = std::move(facts);
  ctx->owns_device_ = false;
  ctx->device = device;
  ctx->queue = queue;
  ctx->host_queue_lock_ = lock;
  ctx->finish_setup(ctx->facts.instance_functions.vkGetDeviceProcAddr);
  return ctx;
}

void Context::finish_setup(PFN_vkGetDeviceProcAddr get_device_proc_addr) {
  const char* staging = std::getenv("SPIRE_VULKAN_FORCE_STAGING");
  force_staging = staging && std::string(staging) == "1";
  fn = DeviceFunctions::load(get_device_proc_addr, device, id());
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pi.queueFamilyIndex = facts.queue_family;
  check(fn.vkCreateCommandPool(device, &pi, nullptr, &transfer_pool_), "vkCreateCommandPool", id());
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = transfer_pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  check(fn.vkAllocateCommandBuffers(device, &ai, &transfer_cmd_), "vkAllocateCommandBuffers", id());
  transfer_fence_ = acquire_fence();
  pipeline_cache_ = std::make_unique<PipelineCache>(facts, device, fn, id());
}

class Context::QueueGuard {
 public:
  explicit QueueGuard(Context& ctx) : ctx_(ctx), mutex_(ctx.queue_mutex_) {
    if (ctx_.host_queue_lock_.lock) ctx_.host_queue_lock_.lock(ctx_.host_queue_lock_.user_data);
  }
  ~QueueGuard() {
    if (ctx_.host_queue_lock_.unlock) ctx_.host_queue_lock_.unlock(ctx_.host_queue_lock_.user_data);
  }
  QueueGuard(const QueueGuard&) = delete;
  QueueGuard& operator=(const QueueGuard&) = delete;

 private:
  Context& ctx_;
  std::lock_guard<std::mutex> mutex_;
};

Context::~Context() {
  if (!device || !fn.vkDestroyDevice) return;  // the device was never made, or its functions never loaded
  // Nothing may be in flight while its objects are destroyed; a failure cannot be reported. Every submission
  // already waited in its own destructor (each holds this context); this also covers a wait that failed.
  // On an adopted device only spire's queue is waited for: vkDeviceWaitIdle would need every queue of the host.
  if (owns_device_) {
    fn.vkDeviceWaitIdle(device);
  } else {
    QueueGuard guard(*this);
    fn.vkQueueWaitIdle(queue);
  }
  pipelines.clear();
  pipeline_cache_.reset();  // saves it to disk while the device is still alive
  release(*this, staging_);
  if (transfer_fence_) fn.vkDestroyFence(device, transfer_fence_, nullptr);
  for (VkFence f : fences_.drain()) fn.vkDestroyFence(device, f, nullptr);
  if (transfer_pool_) fn.vkDestroyCommandPool(device, transfer_pool_, nullptr);
  if (owns_device_) fn.vkDestroyDevice(device, nullptr);
}

void Context::submit(const VkSubmitInfo& si, VkFence fence) {
  QueueGuard guard(*this);
  ++submits_;
  check(fn.vkQueueSubmit(queue, 1, &si, fence), "vkQueueSubmit", id());
}

void Context::wait_idle() {
  QueueGuard guard(*this);
  ++waits_;
  check(fn.vkQueueWaitIdle(queue), "vkQueueWaitIdle", id());
}

VkResult Context::wait_for_fence(VkFence fence) {
  ++waits_;
  // On a GPU, poll the fence for a while before sleeping in vkWaitForFences: a sleeping wait wakes up tens of
  // microseconds after a short step ends (a training step of LeNet is 0.2 ms of GPU time), and CUDA's stream
  // synchronize spins the same way by default. Not on a CPU device (lavapipe), whose work needs the host's cores.
  if (info().type != DeviceType::Cpu) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
    do {
      const VkResult r = fn.vkGetFenceStatus(device, fence);
      if (r != VK_NOT_READY) return r;
    } while (std::chrono::steady_clock::now() < give_up);
  }
  return fn.vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX);
}

VkFence Context::acquire_fence() {
  if (std::optional<VkFence> kept = fences_.take()) return *kept;
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence f = VK_NULL_HANDLE;
  check(fn.vkCreateFence(device, &fi, nullptr, &f), "vkCreateFence", id());
  return f;
}

void Context::recycle_fence(VkFence f) {
  if (fn.vkResetFences(device, 1, &f) != VK_SUCCESS) {
    fn.vkDestroyFence(device, f, nullptr);
    return;
  }
  fences_.give(f);
}

void Context::run_now(const std::function<void(VkCommandBuffer)>& record) {
  check(fn.vkResetCommandBuffer(transfer_cmd_, 0), "vkResetCommandBuffer", id());
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(fn.vkBeginCommandBuffer(transfer_cmd_, &bi), "vkBeginCommandBuffer", id());
  record(transfer_cmd_);
  check(fn.vkEndCommandBuffer(transfer_cmd_), "vkEndCommandBuffer", id());
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &transfer_cmd_;
  check(fn.vkResetFences(device, 1, &transfer_fence_), "vkResetFences", id());
  submit(si, transfer_fence_);
  check(wait_for_fence(transfer_fence_), "vkWaitForFences", id());
}

Allocation& Context::staging(uint64_t bytes) {
  if (staging_.vk_bytes < bytes) {
    release(*this, staging_);
    staging_ = allocate(*this, bytes, Memory::HostVisible);
  }
  return staging_;
}

}  // namespace spire::rt::vulkan
