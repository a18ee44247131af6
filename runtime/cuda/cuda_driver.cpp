#include "runtime/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <fmt/format.h>

#include "runtime/device.h"

namespace spire::rt::cuda {

// The driver's entry points, each resolved into the DriverApi member of its name: those spire cannot run without,
// then the optional ones (cuLaunchKernelEx: programmatic dependent launch; the event record with flags, stream capture
// and graphs: graph replay, else the recorded launch list is replayed; the linker: the module disk cache, else modules
// are JIT-compiled at every start; the tensor-map encoder: Feature::TensorCopy; external memory: a Vulkan device
// exchanging values with CUDA memory).
#define SPIRE_CUDA_REQUIRED_FUNCTIONS(X) \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) \
  X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) \
  X(cuModuleLoadDataEx) X(cuModuleGetFunction) X(cuModuleUnload) X(cuFuncGetAttribute) \
  X(cuFuncSetAttribute) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoDAsync) \
  X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemcpyAsync) X(cuMemHostAlloc) \
  X(cuMemFreeHost) X(cuMemHostGetDevicePointer) X(cuMemsetD32Async) X(cuMemsetD8Async) \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) \
  X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventQuery) \
  X(cuEventElapsedTime) X(cuStreamWaitEvent) X(cuLaunchKernel)
#define SPIRE_CUDA_OPTIONAL_FUNCTIONS(X) \
  X(cuLaunchKernelEx) X(cuEventRecordWithFlags) X(cuStreamBeginCapture) X(cuStreamEndCapture) \
  X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy) \
  X(cuLinkCreate) X(cuLinkAddData) X(cuLinkComplete) X(cuLinkDestroy) \
  X(cuTensorMapEncodeTiled) \
  X(cuDeviceGetUuid) X(cuImportExternalMemory) X(cuExternalMemoryGetMappedBuffer) X(cuDestroyExternalMemory) \
  X(cuImportExternalSemaphore) X(cuSignalExternalSemaphoresAsync) X(cuWaitExternalSemaphoresAsync) \
  X(cuDestroyExternalSemaphore)

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
#define SPIRE_CUDA_NEED(name) need(#name, a.name);
  SPIRE_CUDA_REQUIRED_FUNCTIONS(SPIRE_CUDA_NEED)
#undef SPIRE_CUDA_NEED
  if (!missing.empty()) {
    d.problem = "the CUDA driver lacks entry points spire needs: " + missing;
    return d;
  }
#define SPIRE_CUDA_TRY(name) res.get(#name, a.name);
  SPIRE_CUDA_OPTIONAL_FUNCTIONS(SPIRE_CUDA_TRY)
#undef SPIRE_CUDA_TRY

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
