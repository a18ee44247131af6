#include "runtime/vulkan/vulkan_cuda_bridge.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "runtime/cuda/cuda_driver.h"

namespace spire::rt::vulkan {

namespace {

// Every access of the Vulkan work before the copies, and of the copies before the work after them: the submissions
// around the bridge's copies are ordered by these barriers (a barrier's scopes reach across submissions on one queue).
void full_barrier(const DeviceFunctions& fn, VkCommandBuffer cmd) {
  memory_barrier(fn, cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                 VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
}

constexpr uint64_t kAlignment = 256;               // each queued copy's place in a shared buffer
constexpr uint64_t kFirstSharedBytes = 1ull << 20;  // a shared buffer's first size; it doubles as needed

}  // namespace

CudaPeer find_cuda_peer(const Context& ctx) {
  const cuda::Driver& d = cuda::driver();
  if (!d.ok) return {std::nullopt, d.problem};
  if (!d.api.has_external_memory())
    return {std::nullopt, fmt::format("the {} has no external memory entry points", cuda::driver_version_text(d.version))};
  if (!ctx.fn.vkGetMemoryFdKHR)
    return {std::nullopt, fmt::format("{} ({}) cannot export memory (no VK_KHR_external_memory_fd)", ctx.id(),
                                      ctx.info().name)};
  int count = 0;
  if (d.api.cuDeviceGetCount(&count) != cuda::CUDA_SUCCESS) count = 0;
  for (int i = 0; i < count; ++i) {
    cuda::CUdevice dev = 0;
    cuda::CUuuid uuid{};
    if (d.api.cuDeviceGet(&dev, i) != cuda::CUDA_SUCCESS || d.api.cuDeviceGetUuid(&uuid, dev) != cuda::CUDA_SUCCESS)
      continue;
    if (std::memcmp(uuid.bytes, ctx.facts.device_uuid, sizeof uuid.bytes) == 0) return {i, ""};
  }
  return {std::nullopt, fmt::format("none of the CUDA driver's {} device(s) is {} ({})", count, ctx.id(),
                                    ctx.info().name)};
}

CudaBridge::CudaBridge(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {
  const CudaPeer peer = find_cuda_peer(*ctx_);
  if (!peer.ordinal)
    throw InvalidUse(fmt::format("{}: values cannot be exchanged with CUDA memory: {}", ctx_->id(), peer.problem));
  ordinal_ = *peer.ordinal;
  const cuda::DriverApi& a = cuda::driver().api;
  cuda_check(a.cuDeviceGet(&device_, ordinal_), "cuDeviceGet");
  cuda_check(a.cuDevicePrimaryCtxRetain(&cuda_ctx_, device_), "cuDevicePrimaryCtxRetain");
  try {
    make_current();
    cuda_check(a.cuStreamCreate(&stream_, cuda::CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    cuda_check(a.cuEventCreate(&event_, cuda::CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  } catch (...) {
    if (stream_) a.cuStreamDestroy(stream_);
    a.cuDevicePrimaryCtxRelease(device_);
    throw;
  }
  std::string why_not = SharedTimeline::unavailable(*ctx_);
  if (why_not.empty()) {
    try {
      timeline_ = std::make_unique<SharedTimeline>(ctx_);
    } catch (const Error& e) {  // the host orders the two sides instead, as where the entry points are missing
      why_not = e.what();
    }
  }
  ordering_ = timeline_ ? "a shared timeline semaphore" : fmt::format("the host ({})", why_not);
}

CudaBridge::~CudaBridge() {
  try {
    flush_in_locked();
    flush_out_locked(nullptr, /*to_stream=*/false);
  } catch (...) {  // a destructor cannot report; what was queued is lost with the device
  }
  const cuda::DriverApi& a = cuda::driver().api;
  a.cuCtxSetCurrent(cuda_ctx_);
  a.cuStreamSynchronize(stream_);  // nothing of the bridge's still waits on the semaphore or reads the buffers
  timeline_.reset();
  release(in_);
  release(out_);
  a.cuEventDestroy(event_);
  a.cuStreamDestroy(stream_);
  a.cuDevicePrimaryCtxRelease(device_);
}

void CudaBridge::cuda_check(cuda::CUresult r, const char* call) const {
  cuda::check(cuda::driver(), r, ctx_->id() + " (its CUDA side)", call);
}

void CudaBridge::make_current() { cuda_check(cuda::driver().api.cuCtxSetCurrent(cuda_ctx_), "cuCtxSetCurrent"); }

void CudaBridge::release(Shared& s) {
  if (s.imported) cuda::driver().api.cuDestroyExternalMemory(s.imported);  // the mapped address with it
  s = Shared{};
}

void CudaBridge::import(Shared& s, uint64_t bytes) {
  release(s);
  Shared n;
  n.buffer = std::make_unique<VulkanBuffer>(ctx_, bytes, VulkanBuffer::Exportable{});
  const Allocation& alloc = n.buffer->allocation();
  VkMemoryRequirements req{};
  ctx_->fn.vkGetBufferMemoryRequirements(ctx_->device, alloc.buffer, &req);
  cuda::CudaExternalMemoryHandleDesc desc{};
  desc.type = cuda::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = export_fd(*ctx_, alloc);
  desc.size = req.size;  // the allocation's, as vulkan_memory.cpp made it
  desc.flags = cuda::CUDA_EXTERNAL_MEMORY_DEDICATED;
  const cuda::DriverApi& a = cuda::driver().api;
  const cuda::CUresult imported = a.cuImportExternalMemory(&n.imported, &desc);
  if (imported != cuda::CUDA_SUCCESS) ::close(desc.handle.fd);  // imported, the driver owns the descriptor
  cuda_check(imported, "cuImportExternalMemory");
  cuda::CudaExternalMemoryBufferDesc view{};
  view.size = bytes;
  const cuda::CUresult mapped = a.cuExternalMemoryGetMappedBuffer(&n.address, n.imported, &view);
  if (mapped != cuda::CUDA_SUCCESS) release(n);
  cuda_check(mapped, "cuExternalMemoryGetMappedBuffer");
  s = std::move(n);
}

uint64_t CudaBridge::reserve(Shared& s, uint64_t bytes, void (CudaBridge::*drain)()) {
  const uint64_t at = (s.used + kAlignment - 1) / kAlignment * kAlignment;
  if (s.buffer && at + bytes <= s.buffer->size()) {
    s.used = at + bytes;
    return at;
  }
  (this->*drain)();  // nothing queued reads or writes s any more
  if (!s.buffer || s.buffer->size() < bytes) {
    // Nor does anything in flight, before s is freed: the bridge's stream follows Vulkan's last use of the buffers.
    if (s.buffer) cuda_check(cuda::driver().api.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    import(s, std::max({bytes, kFirstSharedBytes, s.buffer ? 2 * s.buffer->size() : 0}));
  }
  s.used = bytes;
  return 0;
}

void CudaBridge::wait_for_stream(uint64_t stream) {
  std::lock_guard lock(mutex_);
  make_current();
  const cuda::DriverApi& a = cuda::driver().api;
  cuda_check(a.cuEventRecord(event_, reinterpret_cast<cuda::CUstream>(stream)), "cuEventRecord");
  cuda_check(a.cuStreamWaitEvent(stream_, event_, 0), "cuStreamWaitEvent");
}

void CudaBridge::copy_from_address(const VulkanBuffer& dst, uint64_t address, uint64_t bytes, uint64_t offset) {
  if (bytes == 0) return;
  std::lock_guard lock(mutex_);
  make_current();
  const uint64_t at = reserve(in_, bytes, &CudaBridge::flush_in_locked);
  cuda_check(cuda::driver().api.cuMemcpyDtoDAsync(in_.address + at, address, bytes, stream_), "cuMemcpyDtoDAsync");
  copies_in_.push_back({dst.handle(), at, offset, bytes});
}

void CudaBridge::flush_in() {
  std::lock_guard lock(mutex_);
  flush_in_locked();
}

void CudaBridge::record_copies_in(VkCommandBuffer cmd) const {
  full_barrier(ctx_->fn, cmd);
  for (const CopyIn& c : copies_in_) {
    const VkBufferCopy region{c.from, c.to, c.bytes};
    ctx_->fn.vkCmdCopyBuffer(cmd, in_.buffer->handle(), c.dst, 1, &region);
  }
  full_barrier(ctx_->fn, cmd);
}

void CudaBridge::record_copies_out(VkCommandBuffer cmd) const {
  full_barrier(ctx_->fn, cmd);
  for (const CopyOut& c : copies_out_) {
    const VkBufferCopy region{c.from, c.to, c.bytes};
    ctx_->fn.vkCmdCopyBuffer(cmd, c.src, out_.buffer->handle(), 1, &region);
  }
  full_barrier(ctx_->fn, cmd);
}

void CudaBridge::flush_in_locked() {
  if (copies_in_.empty()) return;
  make_current();
  if (timeline_) {
    // The hand-over to Vulkan on the device: the CUDA copies (and the caller's work they wait for), then Vulkan's;
    // the bridge's next CUDA copies into the shared buffer wait for Vulkan's reads of it.
    timeline_->cuda_signal(stream_);
    timeline_->vulkan_submit([&](VkCommandBuffer cmd) { record_copies_in(cmd); });
    timeline_->cuda_wait(stream_);
  } else {
    // The hand-over to Vulkan by the host: the CUDA copies (and the caller's work they wait for) done, then Vulkan's.
    cuda_check(cuda::driver().api.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    std::lock_guard transfer(ctx_->transfer_mutex);
    ctx_->run_now([&](VkCommandBuffer cmd) { record_copies_in(cmd); });
  }
  copies_in_.clear();
  in_.used = 0;
}

void CudaBridge::copy_to_address(const VulkanBuffer& src, uint64_t address, uint64_t bytes, uint64_t offset) {
  if (bytes == 0) return;
  std::lock_guard lock(mutex_);
  flush_in_locked();  // copies queued before this one land first
  const uint64_t at = reserve(out_, bytes, &CudaBridge::drain_out);
  copies_out_.push_back({src.handle(), offset, at, bytes, address});
}

void CudaBridge::signal_stream(uint64_t stream) {
  std::lock_guard lock(mutex_);
  flush_in_locked();
  if (!copies_out_.empty()) {
    flush_out_locked(reinterpret_cast<cuda::CUstream>(stream), /*to_stream=*/true);
  } else if (timeline_) {
    // The stream's later work follows everything submitted to this device so far, on the device.
    make_current();
    timeline_->vulkan_submit([](VkCommandBuffer) {});
    timeline_->cuda_wait(reinterpret_cast<cuda::CUstream>(stream));
  } else {
    ctx_->wait_idle();  // the same, by the host
  }
}

void CudaBridge::flush_out_locked(cuda::CUstream stream, bool to_stream) {
  if (copies_out_.empty()) return;
  make_current();
  const cuda::DriverApi& a = cuda::driver().api;
  if (timeline_) {
    // The hand-over to CUDA on the device: Vulkan's copies wait for the bridge's CUDA copies of the last hand-over
    // to have read the shared buffer (the semaphore's last CUDA value, signalled after them), and the CUDA copies
    // wait for Vulkan's, which follow every submission before them.
    timeline_->vulkan_submit([&](VkCommandBuffer cmd) { record_copies_out(cmd); });
    timeline_->cuda_wait(stream_);
  } else {
    // The CUDA copies of the last hand-over are done reading the shared buffer before Vulkan writes it again.
    cuda_check(a.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    // The hand-over to CUDA by the host: Vulkan's copies behind everything submitted before them, waited for.
    std::lock_guard transfer(ctx_->transfer_mutex);
    ctx_->run_now([&](VkCommandBuffer cmd) { record_copies_out(cmd); });
  }
  for (const CopyOut& c : copies_out_)
    cuda_check(a.cuMemcpyDtoDAsync(c.address, out_.address + c.to, c.bytes, stream_), "cuMemcpyDtoDAsync");
  if (timeline_) timeline_->cuda_signal(stream_);  // the shared buffer is read: Vulkan may write it again
  copies_out_.clear();
  out_.used = 0;
  if (to_stream) {
    cuda_check(a.cuEventRecord(event_, stream_), "cuEventRecord");
    cuda_check(a.cuStreamWaitEvent(stream, event_, 0), "cuStreamWaitEvent");
  } else {
    cuda_check(a.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }
}

void CudaBridge::finish() {
  std::lock_guard lock(mutex_);
  flush_in_locked();
  flush_out_locked(nullptr, /*to_stream=*/false);
  if (timeline_) {
    make_current();
    cuda_check(cuda::driver().api.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    timeline_->finish();
  }
}

}  // namespace spire::rt::vulkan
