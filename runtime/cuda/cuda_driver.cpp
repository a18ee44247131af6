#include "runtime/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <fmt/format.h>

#include "runtime/device.h"

namespace spire::rt::cuda {

namespace {

// cuGetProcAddress_v2 (CUDA 12.0+) and its CUDA 11.3 predecessor without the status argument.
using GetProcV2 = CUresult (*)(const char* symbol, void** fn, int version, uint64_t flags, int* status);
using GetProcV1 = CUresult (*)(const char* symbol, void** fn, int version, uint64_t flags);

struct Resolver {
  GetProcV2 v2 = nullptr;
  GetProcV1 v1 = nullptr;

  template <class Fn>
  bool get(const char* name, Fn& out) const {
    void* p = nullptr;
    CUresult r = v2 ? v2(name, &p, kRequestedApiVersion, CU_GET_PROC_ADDRESS_DEFAULT, nullptr)
                    : v1(name, &p, kRequestedApiVersion, CU_GET_PROC_ADDRESS_DEFAULT);
    if (r != CUDA_SUCCESS || !p) return false;
    out = reinterpret_cast<Fn>(p);
    return true;
  }
};

Driver load() {
  Driver d;
  // Never unloaded: the driver's own atexit handlers must find it mapped.
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = ::dlerror();
    d.problem = fmt::format("the CUDA driver (libcuda.so.1) is not installed or not loadable: {}", why ? why : "?");
    return d;
  }
  Resolver res;
  res.v2 = reinterpret_cast<GetProcV2>(::dlsym(lib, "cuGetProcAddress_v2"));
  if (!res.v2) res.v1 = reinterpret_cast<GetProcV1>(::dlsym(lib, "cuGetProcAddress"));
  if (!res.v2 && !res.v1) {
    d.problem = "libcuda.so.1 has no cuGetProcAddress: the CUDA driver is older than CUDA 11.3";
    return d;
  }
  DriverApi& a = d.api;
  std::string missing;
  auto need = [&](const char* name, auto& fn) {
    if (!res.get(name, fn)) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  need("cuInit", a.cuInit);
  need("cuDriverGetVersion", a.cuDriverGetVersion);
  need("cuGetErrorName", a.cuGetErrorName);
  need("cuGetErrorString", a.cuGetErrorString);
  need("cuDeviceGetCount", a.cuDeviceGetCount);
  need("cuDeviceGet", a.cuDeviceGet);
  need("cuDeviceGetName", a.cuDeviceGetName);
  need("cuDeviceGetAttribute", a.cuDeviceGetAttribute);
  need("cuDeviceTotalMem", a.cuDeviceTotalMem);
  need("cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain);
  need("cuDevicePrimaryCtxRelease", a.cuDevicePrimaryCtxRelease);
  need("cuCtxSetCurrent", a.cuCtxSetCurrent);
  need("cuModuleLoadDataEx", a.cuModuleLoadDataEx);
  need("cuModuleGetFunction", a.cuModuleGetFunction);
  need("cuModuleUnload", a.cuModuleUnload);
  need("cuFuncGetAttribute", a.cuFuncGetAttribute);
  need("cuFuncSetAttribute", a.cuFuncSetAttribute);
  need("cuMemAlloc", a.cuMemAlloc);
  need("cuMemFree", a.cuMemFree);
  need("cuMemcpyHtoDAsync", a.cuMemcpyHtoDAsync);
  need("cuMemcpyDtoHAsync", a.cuMemcpyDtoHAsync);
  need("cuMemcpyDtoDAsync", a.cuMemcpyDtoDAsync);
  need("cuMemcpyAsync", a.cuMemcpyAsync);
  need("cuMemHostAlloc", a.cuMemHostAlloc);
  need("cuMemFreeHost", a.cuMemFreeHost);
  need("cuMemHostGetDevicePointer", a.cuMemHostGetDevicePointer);
  need("cuMemsetD32Async", a.cuMemsetD32Async);
  need("cuMemsetD8Async", a.cuMemsetD8Async);
  need("cuStreamCreate", a.cuStreamCreate);
  need("cuStreamDestroy", a.cuStreamDestroy);
  need("cuStreamSynchronize", a.cuStreamSynchronize);
  need("cuEventCreate", a.cuEventCreate);
  need("cuEventDestroy", a.cuEventDestroy);
  need("cuEventRecord", a.cuEventRecord);
  need("cuEventSynchronize", a.cuEventSynchronize);
  need("cuEventQuery", a.cuEventQuery);
  need("cuEventElapsedTime", a.cuEventElapsedTime);
  need("cuStreamWaitEvent", a.cuStreamWaitEvent);
  need("cuLaunchKernel", a.cuLaunchKernel);
  if (!missing.empty()) {
    d.problem = "the CUDA driver lacks entry points spire needs: " + missing;
    return d;
  }
  res.get("cuLaunchKernelEx", a.cuLaunchKernelEx);
  // Graph replay is optional: without these the recorded launch list is replayed instead.
  res.get("cuEventRecordWithFlags", a.cuEventRecordWithFlags);
  res.get("cuStreamBeginCapture", a.cuStreamBeginCapture);
  res.get("cuStreamEndCapture", a.cuStreamEndCapture);
  res.get("cuGraphInstantiateWithFlags", a.cuGraphInstantiateWithFlags);
  res.get("cuGraphLaunch", a.cuGraphLaunch);
  res.get("cuGraphExecDestroy", a.cuGraphExecDestroy);
  res.get("cuGraphDestroy", a.cuGraphDestroy);
  // The linker is optional too: without it, modules are JIT-compiled at every start (no disk cache).
  res.get("cuLinkCreate", a.cuLinkCreate);
  res.get("cuLinkAddData", a.cuLinkAddData);
  res.get("cuLinkComplete", a.cuLinkComplete);
  res.get("cuLinkDestroy", a.cuLinkDestroy);
  // Tensor copies are optional: without the encoder no device reports Feature::TensorCopy.
  res.get("cuTensorMapEncodeTiled", a.cuTensorMapEncodeTiled);

  a.cuDriverGetVersion(&d.version);
  CUresult r = a.cuInit(0);
  if (r != CUDA_SUCCESS) {
    d.problem = fmt::format("cuInit failed ({}): {}", driver_version_text(d.version), result_text(d, r));
    return d;
  }
  d.ok = true;
  return d;
}

}  // namespace

const Driver& driver() {
  static const Driver d = load();
  return d;
}

std::string result_text(const Driver& d, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.api.cuGetErrorName) d.api.cuGetErrorName(r, &name);
  if (d.api.cuGetErrorString) d.api.cuGetErrorString(r, &text);
  return fmt::format("{} ({}): {}", name ? name : "unknown CUresult", r, text ? text : "no description");
}

std::string driver_version_text(int version) {
  return fmt::format("CUDA driver {}.{}", version / 1000, (version % 1000) / 10);
}

void throw_result(const Driver& d, CUresult r, std::string_view device, std::string_view call,
                  std::string_view context) {
  std::string msg = fmt::format("{}: {} failed{}{}: {}", device, call, context.empty() ? "" : " ", context,
                                result_text(d, r));
  // Faults inside a kernel (illegal address, illegal instruction, misaligned address, trap, launch failure)
  // leave the context unusable: every later call on it returns the same error.
  if (r == 700 || r == 702 || (r >= 714 && r <= 719))
    msg += " (a kernel faulted; CUDA keeps this error for the rest of the process, so later calls on this device "
           "fail the same way; rerun with compute-sanitizer to find the faulting access)";
  if (r == CUDA_ERROR_OUT_OF_MEMORY) throw OutOfMemory(msg);
  throw Error(msg);
}

}  // namespace spire::rt::cuda
