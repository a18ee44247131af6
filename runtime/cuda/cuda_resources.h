// Device memory and loaded kernels of the CUDA runtime.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "runtime/cuda/cuda_context.h"

namespace spire::rt::cuda {

// Memory::DeviceLocal is device memory from cuMemAlloc, which the host reaches only through the driver's copies.
// Memory::HostVisible is pinned host memory mapped into the device's address space (cuMemHostAlloc with
// DEVICEMAP): the host reads and writes it in place (mapped()), kernels and in-stream copies reach it through
// ptr(), and a copy in a recorded stream moves it to or from device memory with no transfer of its own.
// Memory::DeviceMapped gives DeviceLocal memory: the driver API maps no device memory into the host.
class CudaBuffer final : public Buffer {
 public:
  // `host`: the pinned allocation of a HostVisible buffer (ptr is its device address), null for device memory.
  CudaBuffer(std::shared_ptr<Context> ctx, CUdeviceptr ptr, uint64_t bytes, Memory memory, void* host = nullptr)
      : ctx_(std::move(ctx)), ptr_(ptr), bytes_(bytes), memory_(memory), host_(host) {}
  ~CudaBuffer() override;
  uint64_t size() const override { return bytes_; }
  Memory memory() const override { return memory_; }
  void* mapped() const override { return host_; }
  CUdeviceptr ptr() const { return ptr_; }
  const Context* context() const { return ctx_.get(); }

 private:
  std::shared_ptr<Context> ctx_;
  CUdeviceptr ptr_;
  uint64_t bytes_;
  Memory memory_;
  void* host_;
};

// A module loaded from PTX; unloaded when the last kernel using it and the device's cache let go.
class Module {
 public:
  Module(std::shared_ptr<Context> ctx, CUmodule m) : ctx_(std::move(ctx)), module_(m) {}
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  CUmodule get() const { return module_; }

 private:
  std::shared_ptr<Context> ctx_;
  CUmodule module_;
};

class CudaKernel final : public Kernel {
 public:
  CudaKernel(KernelInterface ir, std::shared_ptr<Module> module, CUfunction fn, const Context* ctx, uint32_t dynamic_shared,
             bool waits_for_previous)
      : ir_(std::move(ir)), module_(std::move(module)), fn_(fn), ctx_(ctx), dynamic_shared_(dynamic_shared),
        waits_for_previous_(waits_for_previous) {}
  const KernelInterface& interface() const override { return ir_; }
  CUfunction function() const { return fn_; }
  uint32_t dynamic_shared_bytes() const { return dynamic_shared_; }  // each launch passes it
  const Context* context() const { return ctx_; }
  // Its code waits for the kernel before it to finish before reading anything (griddepcontrol.wait, which the PTX
  // backend emits for sm_90 on): only then may it be launched while that kernel still runs.
  bool waits_for_previous() const { return waits_for_previous_; }

 private:
  KernelInterface ir_;
  std::shared_ptr<Module> module_;
  CUfunction fn_;
  const Context* ctx_;
  uint32_t dynamic_shared_;
  bool waits_for_previous_;
};

}  // namespace spire::rt::cuda
