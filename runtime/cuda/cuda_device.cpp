#include "runtime/cuda/cuda_device.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "runtime/cuda/cuda_command_stream.h"
#include "runtime/cuda/cuda_device_info.h"

namespace spire::rt::cuda {

namespace {

class CudaFence final : public Fence {
 public:
  CudaFence(std::shared_ptr<Context> ctx, CUevent e) : ctx_(std::move(ctx)), event_(e) {}
  ~CudaFence() override { ctx_->return_fence_event(event_); }
  void wait() override {
    if (done_) return;
    ctx_->make_current();
    ctx_->count_wait();
    ctx_->check(ctx_->api().cuEventSynchronize(event_), "cuEventSynchronize", "(waiting for a submitted command stream)");
    done_ = true;
  }
  bool ready() override {
    if (done_) return true;
    ctx_->make_current();
    CUresult r = ctx_->api().cuEventQuery(event_);
    if (r == CUDA_ERROR_NOT_READY) return false;
    ctx_->check(r, "cuEventQuery", "(polling a submitted command stream)");
    done_ = true;
    return true;
  }

 private:
  std::shared_ptr<Context> ctx_;
  CUevent event_;
  bool done_ = false;  // seen complete: a second wait() neither calls the driver nor counts as a wait
};

// Where a PTX module the driver rejected is saved, so the failure can be reproduced with ptxas.
std::string save_rejected_ptx(const std::string& ptx, const std::string& entry) {
  static std::atomic<int> counter{0};
  auto path = std::filesystem::temp_directory_path() /
              fmt::format("spire-rejected-{}-{}-{}.ptx", entry, ::getpid(), counter++);
  std::ofstream out(path);
  out << ptx;
  return out ? path.string() : std::string("(could not save the PTX)");
}

}  // namespace

CudaBuffer::~CudaBuffer() {
  if (!ptr_) return;
  try {
    ctx_->make_current();
  } catch (...) {  // destructors must not throw
  }
  if (host_)
    ctx_->api().cuMemFreeHost(host_);
  else
    ctx_->api().cuMemFree(ptr_);
}

Module::~Module() {
  try {
    ctx_->make_current();
  } catch (...) {
  }
  ctx_->api().cuModuleUnload(module_);
}

CudaDevice::~CudaDevice() {
  try {
    wait_idle();
  } catch (...) {  // a faulted context: nothing left to wait for
  }
}

const CudaBuffer& CudaDevice::own(const Buffer& b, const char* what) const {
  auto* cb = dynamic_cast<const CudaBuffer*>(&b);
  if (!cb) throw Error(fmt::format("{}: {}: the buffer does not belong to a CUDA device", ctx_->id(), what));
  if (cb->context() != ctx_.get())
    throw Error(fmt::format("{}: {}: the buffer belongs to {}", ctx_->id(), what, cb->context()->id()));
  return *cb;
}

const CudaBuffer& CudaDevice::own_range(const Buffer& b, uint64_t bytes, uint64_t offset, const char* what) const {
  const CudaBuffer& cb = own(b, what);
  if (offset > cb.size() || bytes > cb.size() - offset)
    throw Error(fmt::format("{}: {} of {} bytes at offset {} exceeds the buffer's {} bytes", ctx_->id(), what, bytes,
                            offset, cb.size()));
  return cb;
}

std::shared_ptr<Buffer> CudaDevice::alloc(uint64_t bytes, Memory memory) {
  const DeviceInfo& d = info();
  if (memory == Memory::DeviceMapped) memory = Memory::DeviceLocal;  // the host cannot map device memory here
  if (bytes > d.memory_bytes)
    throw OutOfMemory(fmt::format("{} ({}): cannot allocate {} bytes ({}): the device has {} bytes ({}) in all", d.id,
                                  d.name, bytes, bytes_text(bytes), d.memory_bytes, bytes_text(d.memory_bytes)));
  if (bytes == 0) return std::make_shared<CudaBuffer>(ctx_, 0, 0, memory);
  ctx_->make_current();
  if (memory == Memory::HostVisible) return alloc_host_visible(bytes);
  CUdeviceptr p = 0;
  CUresult r = ctx_->api().cuMemAlloc(&p, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw OutOfMemory(fmt::format("{} ({}): out of memory allocating {} bytes ({}) of its {}: {}", d.id, d.name, bytes,
                                  bytes_text(bytes), bytes_text(d.memory_bytes), result_text(ctx_->driver(), r)));
  ctx_->check(r, "cuMemAlloc", fmt::format("({} bytes)", bytes));
  return std::make_shared<CudaBuffer>(ctx_, p, bytes, memory);
}

std::shared_ptr<Buffer> CudaDevice::alloc_host_visible(uint64_t bytes) {
  const DeviceInfo& d = info();
  const DriverApi& a = ctx_->api();
  void* host = nullptr;
  CUresult r = a.cuMemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_DEVICEMAP);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw OutOfMemory(fmt::format("{} ({}): out of pinned host memory allocating {} bytes ({}) of host-visible memory: {}",
                                  d.id, d.name, bytes, bytes_text(bytes), result_text(ctx_->driver(), r)));
  ctx_->check(r, "cuMemHostAlloc", fmt::format("({} bytes of host-visible memory)", bytes));
  CUdeviceptr p = 0;
  r = a.cuMemHostGetDevicePointer(&p, host, 0);
  if (r != CUDA_SUCCESS) {
    a.cuMemFreeHost(host);
    ctx_->check(r, "cuMemHostGetDevicePointer", "(of new host-visible memory)");
  }
  return std::make_shared<CudaBuffer>(ctx_, p, bytes, Memory::HostVisible, host);
}

void CudaDevice::upload(Buffer& dst, const void* src, uint64_t bytes, uint64_t offset) {
  const CudaBuffer& b = own_range(dst, bytes, offset, "upload");
  if (!bytes) return;
  ctx_->make_current();
  if (b.mapped()) {  // host memory: once the work that may use it is done, the host writes it itself
    ctx_->synchronize("(before writing host-visible memory)");
    std::memcpy(static_cast<char*>(b.mapped()) + offset, src, bytes);
    return;
  }
  ctx_->count_submit();
  ctx_->check(ctx_->api().cuMemcpyHtoDAsync(b.ptr() + offset, src, bytes, ctx_->stream()), "cuMemcpyHtoDAsync");
  ctx_->synchronize("(after an upload)");
}

void CudaDevice::download(const Buffer& src, void* dst, uint64_t bytes, uint64_t offset) {
  const CudaBuffer& b = own_range(src, bytes, offset, "download");
  if (!bytes) return;
  ctx_->make_current();
  if (b.mapped()) {
    ctx_->synchronize("(before reading host-visible memory)");
    std::memcpy(dst, static_cast<const char*>(b.mapped()) + offset, bytes);
    return;
  }
  ctx_->count_submit();
  ctx_->check(ctx_->api().cuMemcpyDtoHAsync(dst, b.ptr() + offset, bytes, ctx_->stream()), "cuMemcpyDtoHAsync");
  ctx_->synchronize("(after a download)");
}

void CudaDevice::fill(Buffer& dst, uint32_t pattern) {
  const CudaBuffer& b = own(dst, "fill");
  if (!b.size()) return;
  ctx_->make_current();
  if (b.mapped()) {
    ctx_->synchronize("(before filling host-visible memory)");
    fill_host_bytes(b.mapped(), b.size(), pattern);
    return;
  }
  ctx_->count_submit();
  const DriverApi& a = ctx_->api();
  uint64_t words = b.size() / 4;
  if (words) ctx_->check(a.cuMemsetD32Async(b.ptr(), pattern, words, ctx_->stream()), "cuMemsetD32Async");
  // A size that is not a multiple of 4 ends with the first bytes of the (little-endian) pattern.
  for (uint64_t i = words * 4; i < b.size(); ++i) {
    auto byte = static_cast<unsigned char>(pattern >> (8 * (i % 4)));
    ctx_->check(a.cuMemsetD8Async(b.ptr() + i, byte, 1, ctx_->stream()), "cuMemsetD8Async");
  }
  ctx_->synchronize("(after a fill)");
}

void CudaDevice::copy_from_address(Buffer& dst, uint64_t address, uint64_t bytes, uint64_t offset) {
  copy_with_address(dst, address, bytes, offset, true);
}

void CudaDevice::copy_to_address(const Buffer& src, uint64_t address, uint64_t bytes, uint64_t offset) {
  copy_with_address(src, address, bytes, offset, false);
}

void CudaDevice::copy_with_address(const Buffer& buffer, uint64_t address, uint64_t bytes, uint64_t offset,
                                   bool into_buffer) {
  const char* what = into_buffer ? "copy_from_address" : "copy_to_address";
  const CudaBuffer& b = own_range(buffer, bytes, offset, what);
  if (!bytes) return;
  ctx_->make_current();
  ctx_->count_submit();
  const CUdeviceptr in_buffer = b.ptr() + offset, other = CUdeviceptr(address);
  ctx_->check(ctx_->api().cuMemcpyAsync(into_buffer ? in_buffer : other, into_buffer ? other : in_buffer, bytes,
                                        ctx_->stream()),
              "cuMemcpyAsync", fmt::format("({} bytes {} address {:#x})", bytes, into_buffer ? "from" : "to", address));
}

void CudaDevice::wait_for_stream(uint64_t stream) { order_streams(CUstream(stream), ctx_->stream(), "wait_for_stream"); }

void CudaDevice::signal_stream(uint64_t stream) { order_streams(ctx_->stream(), CUstream(stream), "signal_stream"); }

void CudaDevice::order_streams(CUstream earlier, CUstream later, const char* what) {
  ctx_->make_current();
  const DriverApi& a = ctx_->api();
  CUevent e = ctx_->take_fence_event();
  const CUresult recorded = a.cuEventRecord(e, earlier);
  const CUresult waited = recorded == CUDA_SUCCESS ? a.cuStreamWaitEvent(later, e, 0) : CUDA_SUCCESS;
  // A wait holds the event's state at the time of the call, so the event may be recorded again (as a fence) at once.
  ctx_->return_fence_event(e);
  ctx_->check(recorded, "cuEventRecord", fmt::format("({}: the stream to wait for)", what));
  ctx_->check(waited, "cuStreamWaitEvent", fmt::format("({})", what));
}

std::shared_ptr<Module> CudaDevice::load_module(const std::string& ptx, const KernelBinary& binary) {
  const KernelInterface& k = binary.interface;
  {
    std::lock_guard lock(modules_mutex_);
    if (auto it = modules_.find(ptx); it != modules_.end()) return it->second;
  }
  // Loaded outside the lock, so that several threads JIT-compile or load modules at once (PlanExecutor loads a
  // plan's distinct kernels in parallel). Two threads loading the same PTX keep the first module.
  ctx_->make_current();
  std::string info_log(16 * 1024, '\0'), error_log(16 * 1024, '\0');
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {info_log.data(), reinterpret_cast<void*>(uintptr_t(info_log.size())), error_log.data(),
                    reinterpret_cast<void*>(uintptr_t(error_log.size()))};
  // The disk cache first; the JIT below is also the path that reports a module the driver rejects, with its logs.
  CUmodule m = module_cache_.load(ptx);
  CUresult r = m ? CUDA_SUCCESS : ctx_->api().cuModuleLoadDataEx(&m, ptx.c_str(), 4, options, values);
  if (r != CUDA_SUCCESS) {
    auto text = [](const std::string& log) { return std::string(log.c_str()); };  // up to the first NUL
    std::string path = save_rejected_ptx(ptx, binary.entry);
    throw Error(fmt::format("{} ({}): the CUDA driver rejected the PTX of kernel '{}' (generated for sm_{}, device "
                            "sm_{}): {}\nJIT error log: {}\nJIT info log: {}\nPTX saved to {}",
                            ctx_->id(), info().name, k.name, binary.ptx_sm, info().compute_capability,
                            result_text(ctx_->driver(), r),
                            text(error_log).empty() ? "(empty)" : text(error_log),
                            text(info_log).empty() ? "(empty)" : text(info_log), path));
  }
  auto module = std::make_shared<Module>(ctx_, m);
  std::lock_guard lock(modules_mutex_);
  return modules_.emplace(ptx, module).first->second;
}

std::shared_ptr<Kernel> CudaDevice::load(const KernelBinary& binary) {
  const DeviceInfo& d = info();
  const KernelInterface& k = binary.interface;
  if (binary.format != BinaryFormat::Ptx || binary.ptx.empty())
    throw Error(fmt::format("kernel '{}' is {}; {} ({}) loads PTX", k.name, binary_format_name(binary.format), d.id, d.name));
  if (binary.ptx_sm > d.compute_capability)
    throw Error(fmt::format("kernel '{}' was compiled for sm_{}; {} ({}) is sm_{}", k.name, binary.ptx_sm, d.id, d.name,
                            d.compute_capability));
  if (!k.features.missing_from(d.features).empty()) throw MissingFeature(missing_feature_message(k, d));
  for (int i = 0; i < 3; ++i)
    if (k.workgroup_size[i] > d.max_workgroup_size[i] || k.workgroup_invocations() > d.max_workgroup_invocations)
      throw Error(fmt::format("{}: kernel '{}' has workgroup {}x{}x{}; the device allows {}x{}x{} and {} invocations",
                              d.id, k.name, k.workgroup_size[0], k.workgroup_size[1], k.workgroup_size[2],
                              d.max_workgroup_size[0], d.max_workgroup_size[1], d.max_workgroup_size[2],
                              d.max_workgroup_invocations));
  if (k.shared_bytes > d.shared_memory_bytes)
    throw Error(fmt::format("{}: kernel '{}' needs {} bytes of workgroup memory; the device allows {}", d.id, k.name,
                            k.shared_bytes, d.shared_memory_bytes));
  std::shared_ptr<Module> module = load_module(binary.ptx, binary);
  const std::string& entry = binary.entry;
  ctx_->make_current();
  CUfunction fn = nullptr;
  ctx_->check(ctx_->api().cuModuleGetFunction(&fn, module->get(), entry.c_str()), "cuModuleGetFunction",
              fmt::format("(entry '{}')", entry));
  // Register pressure can lower the block size a function can launch with below what the kernel asks.
  int max_threads = 0, regs = 0;
  ctx_->check(ctx_->api().cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn),
              "cuFuncGetAttribute");
  if (uint32_t(max_threads) < k.workgroup_invocations()) {
    ctx_->api().cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
    throw Error(fmt::format("{}: kernel '{}' uses {} registers per thread, which allows at most {} threads per "
                            "workgroup; it asks for {}: use a smaller workgroup",
                            d.id, k.name, regs, max_threads, k.workgroup_invocations()));
  }
  // Dynamic shared memory past 48 KiB must be asked for per function before the first launch.
  if (k.dynamic_shared_bytes)
    ctx_->check(ctx_->api().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               int(k.dynamic_shared_bytes)),
                "cuFuncSetAttribute",
                fmt::format("({} bytes of dynamic shared memory for kernel '{}')", k.dynamic_shared_bytes, k.name));
  // (Read from the code itself: PTX an older spire compiled into a bundle has no such wait.)
  const bool waits = binary.ptx.find("griddepcontrol.wait;") != std::string::npos;
  return std::make_shared<CudaKernel>(k, std::move(module), fn, ctx_.get(), k.dynamic_shared_bytes, waits);
}

std::string CudaDevice::kernel_cache_summary() const {
  const ModuleCacheStats s = module_cache_stats();
  if (!s.enabled) return fmt::format("cubin cache off; {} modules JIT-compiled by the driver", loaded_module_count());
  return fmt::format("cubin cache: {} hits, {} modules linked from PTX and stored", s.disk_hits, s.linked);
}

size_t CudaDevice::loaded_module_count() const {
  std::lock_guard lock(modules_mutex_);
  return modules_.size();
}

std::unique_ptr<CommandStream> CudaDevice::record() { return std::make_unique<CudaCommandStream>(ctx_); }

std::unique_ptr<Fence> CudaDevice::submit(CommandStream& s) {
  auto* cs = dynamic_cast<CudaCommandStream*>(&s);
  if (!cs) throw Error(fmt::format("{}: submit of a command stream recorded by another backend", ctx_->id()));
  if (cs->context() != ctx_.get())
    throw Error(fmt::format("{}: submit of a command stream recorded on {}", ctx_->id(), cs->context()->id()));
  ctx_->count_submit();
  cs->enqueue(ctx_->stream());
  CUevent e = ctx_->take_fence_event();
  CUresult r = ctx_->api().cuEventRecord(e, ctx_->stream());
  if (r != CUDA_SUCCESS) {
    ctx_->return_fence_event(e);
    ctx_->check(r, "cuEventRecord", "(fence)");
  }
  return std::make_unique<CudaFence>(ctx_, e);
}

void CudaDevice::wait_idle() {
  ctx_->make_current();
  ctx_->synchronize("(wait_idle)");
}

}  // namespace spire::rt::cuda
