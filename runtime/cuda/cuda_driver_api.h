// The few CUDA driver API types, constants and entry points runtime/cuda uses, declared here so that spire
// builds without the CUDA toolkit (cuda.h is not a Debian package) and never links libcuda.
//
// Everything below mirrors the driver's C ABI, which NVIDIA keeps stable: handle types are opaque pointers,
// CUdeviceptr is 64-bit, enum values are those of cuda.h. Each function pointer type is the ABI of the
// function version that cuGetProcAddress returns when asked for kRequestedApiVersion (CUDA 12.0): e.g.
// "cuMemAlloc" then resolves to the 64-bit cuMemAlloc_v2. Do not change that version without re-checking
// every signature below against the matching PFN_*_vNNNN typedefs of <cudaTypedefs.h>.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spire::rt::cuda {

// The API version whose function variants the pointers below describe (CUDA 12.0).
inline constexpr int kRequestedApiVersion = 12000;

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUlinkState = struct CUlinkState_st*;
using CUjitInputType = int;
using CUjit_option = int;
using CUdevice_attribute = int;
using CUfunction_attribute = int;
using CUstreamCaptureMode = int;
using CUexternalMemory = struct CUextMemory_st*;
using CUexternalSemaphore = struct CUextSemaphore_st*;

// CUresult values we act on (others are reported by cuGetErrorName/cuGetErrorString).
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;

// CUdevice_attribute
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_INTEGRATED = 18;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

// CUfunction_attribute
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

// CUjit_option
inline constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER = 3;
inline constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

// cuTensorMapEncodeTiled's enums (CUtensorMapDataType, CUtensorMapSwizzle, CUtensorMapL2promotion, ...)
inline constexpr int CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6;
inline constexpr int CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7;
inline constexpr int CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9;
inline constexpr int CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
inline constexpr int CU_TENSOR_MAP_SWIZZLE_NONE = 0;
inline constexpr int CU_TENSOR_MAP_SWIZZLE_128B = 3;
inline constexpr int CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3;
inline constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;  // out-of-bounds elements read as zeros
inline constexpr size_t kTensorMapBytes = 128;

// CUjitInputType
inline constexpr CUjitInputType CU_JIT_INPUT_PTX = 1;

// cuLaunchKernelEx's configuration, laid out as cuda.h's CUlaunchConfig and CUlaunchAttribute (a 64-byte value union);
// spire sets one attribute, Hopper's programmatic stream serialization (programmatic dependent launch).
using CUlaunchAttributeID = int;
inline constexpr CUlaunchAttributeID CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
struct CUlaunchAttribute {
  CUlaunchAttributeID id;
  char pad[8 - sizeof(CUlaunchAttributeID)];
  union {
    char bytes[64];
    unsigned programmatic_stream_serialization_allowed;
  } value;
};
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned numAttrs;
};

// Memory another API allocated and exported, imported by a file descriptor (cuda.h's CUDA_EXTERNAL_MEMORY_HANDLE_DESC
// and CUDA_EXTERNAL_MEMORY_BUFFER_DESC): runtime/vulkan/vulkan_cuda_bridge.h imports Vulkan buffers this way.
inline constexpr int CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD = 1;
inline constexpr unsigned CUDA_EXTERNAL_MEMORY_DEDICATED = 0x1;
// The handle of an external memory or semaphore: a file descriptor here.
union CudaExternalHandle {
  int fd;
  struct {
    void* handle;
    const void* name;
  } win32;
  const void* nv_sci_object;
};
struct CudaExternalMemoryHandleDesc {
  int type;
  CudaExternalHandle handle;
  unsigned long long size;
  unsigned flags;
  unsigned reserved[16];
};
struct CudaExternalMemoryBufferDesc {
  unsigned long long offset;
  unsigned long long size;
  unsigned flags;
  unsigned reserved[16];
};
static_assert(sizeof(CudaExternalMemoryHandleDesc) == 104 && sizeof(CudaExternalMemoryBufferDesc) == 88,
              "the layouts of cuda.h's CUDA_EXTERNAL_MEMORY_HANDLE_DESC and CUDA_EXTERNAL_MEMORY_BUFFER_DESC");
// A Vulkan timeline semaphore imported by a file descriptor, which a stream signals and waits on at given values (cuda.h's
// CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, _SIGNAL_PARAMS and _WAIT_PARAMS, of which a timeline uses the fence's value):
// vulkan_cuda_bridge.h orders CUDA's and Vulkan's work on the device this way.
inline constexpr int CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD = 9;
struct CudaExternalSemaphoreHandleDesc {
  int type;
  CudaExternalHandle handle;
  unsigned flags;
  unsigned reserved[16];
};
struct CudaExternalSemaphoreSignalParams {
  struct {
    struct {
      unsigned long long value;
    } fence;
    unsigned long long nv_sci_sync;
    unsigned long long keyed_mutex_key;
    unsigned reserved[12];
  } params;
  unsigned flags;
  unsigned reserved[16];
};
struct CudaExternalSemaphoreWaitParams {
  struct {
    struct {
      unsigned long long value;
    } fence;
    unsigned long long nv_sci_sync;
    struct {
      unsigned long long key;
      unsigned timeout_ms;
    } keyed_mutex;
    unsigned reserved[10];
  } params;
  unsigned flags;
  unsigned reserved[16];
};
static_assert(sizeof(CudaExternalSemaphoreHandleDesc) == 96 && sizeof(CudaExternalSemaphoreSignalParams) == 144 &&
                  sizeof(CudaExternalSemaphoreWaitParams) == 144,
              "the layouts of cuda.h's CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, _SIGNAL_PARAMS and _WAIT_PARAMS");
struct CUuuid {
  char bytes[16];
};

// Flags
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
inline constexpr unsigned CU_EVENT_DEFAULT = 0x0;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
inline constexpr unsigned CU_EVENT_RECORD_EXTERNAL = 0x1;  // in stream capture: an event record node
inline constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
inline constexpr unsigned CU_MEMHOSTALLOC_DEVICEMAP = 0x02;  // pinned host memory the device can address
inline constexpr uint64_t CU_GET_PROC_ADDRESS_DEFAULT = 0;

// Entry points (CUDA 12.0 variants; see the top of this file).
struct DriverApi {
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** str) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error, const char** str) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice dev) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, CUdevice_attribute attrib, CUdevice dev) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice dev) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice dev) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext ctx) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule* module, const void* image, unsigned num_options, CUjit_option* options,
                                 void** option_values) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction* fn, CUmodule module, const char* name) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuFuncGetAttribute)(int* value, CUfunction_attribute attrib, CUfunction fn) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction fn, CUfunction_attribute attrib, int value) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr* ptr, size_t bytes) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr ptr) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) = nullptr;
  // Unified addressing: the direction follows from the pointers (device memory or pinned host memory).
  CUresult (*cuMemcpyAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuMemHostAlloc)(void** host, size_t bytes, unsigned flags) = nullptr;
  CUresult (*cuMemFreeHost)(void* host) = nullptr;
  CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr* ptr, void* host, unsigned flags) = nullptr;
  CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned value, size_t count, CUstream stream) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream) = nullptr;
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream stream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags) = nullptr;
  CUresult (*cuEventDestroy)(CUevent event) = nullptr;
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  CUresult (*cuEventQuery)(CUevent event) = nullptr;
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent end) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shared_bytes, CUstream stream, void** params,
                             void** extra) = nullptr;
  // Optional (programmatic dependent launch on compute capability 9.0 and later; without it, plain launches).
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig* config, CUfunction fn, void** params, void** extra) = nullptr;
  // Optional (graph replay; a missing one means the launch-list replay is used).
  CUresult (*cuEventRecordWithFlags)(CUevent event, CUstream stream, unsigned flags) = nullptr;
  CUresult (*cuStreamBeginCapture)(CUstream stream, CUstreamCaptureMode mode) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph* graph) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec* exec, CUgraph graph, unsigned long long flags) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph graph) = nullptr;
  // Optional (the on-disk module cache, cuda_module_cache.h; a missing one turns that cache off).
  CUresult (*cuLinkCreate)(unsigned num_options, CUjit_option* options, void** option_values,
                           CUlinkState* state) = nullptr;
  CUresult (*cuLinkAddData)(CUlinkState state, CUjitInputType type, void* data, size_t size, const char* name,
                            unsigned num_options, CUjit_option* options, void** option_values) = nullptr;
  CUresult (*cuLinkComplete)(CUlinkState state, void** cubin, size_t* size) = nullptr;
  CUresult (*cuLinkDestroy)(CUlinkState state) = nullptr;

  // Optional (tensor copies, Feature::TensorCopy; CUDA 12.0 drivers and later have it). The types are CUDA's:
  // CUtensorMap* (128 bytes, 64-aligned), then enums as ints and cuuint64_t / cuuint32_t arrays.
  CUresult (*cuTensorMapEncodeTiled)(void* map, int data_type, unsigned rank, void* global_address,
                                     const unsigned long long* global_dims, const unsigned long long* global_strides,
                                     const unsigned* box_dims, const unsigned* element_strides, int interleave,
                                     int swizzle, int l2_promotion, int oob_fill) = nullptr;

  // Optional (external memory: a Vulkan device exchanging values with CUDA memory, vulkan_cuda_bridge.h).
  CUresult (*cuDeviceGetUuid)(CUuuid* uuid, CUdevice dev) = nullptr;
  CUresult (*cuImportExternalMemory)(CUexternalMemory* memory, const CudaExternalMemoryHandleDesc* desc) = nullptr;
  CUresult (*cuExternalMemoryGetMappedBuffer)(CUdeviceptr* ptr, CUexternalMemory memory,
                                              const CudaExternalMemoryBufferDesc* desc) = nullptr;
  CUresult (*cuDestroyExternalMemory)(CUexternalMemory memory) = nullptr;
  // Optional (external semaphores: the same, ordered on the device instead of by the host).
  CUresult (*cuImportExternalSemaphore)(CUexternalSemaphore* semaphore,
                                        const CudaExternalSemaphoreHandleDesc* desc) = nullptr;
  CUresult (*cuSignalExternalSemaphoresAsync)(const CUexternalSemaphore* semaphores,
                                              const CudaExternalSemaphoreSignalParams* params, unsigned count,
                                              CUstream stream) = nullptr;
  CUresult (*cuWaitExternalSemaphoresAsync)(const CUexternalSemaphore* semaphores,
                                            const CudaExternalSemaphoreWaitParams* params, unsigned count,
                                            CUstream stream) = nullptr;
  CUresult (*cuDestroyExternalSemaphore)(CUexternalSemaphore semaphore) = nullptr;

  bool has_linker() const { return cuLinkCreate && cuLinkAddData && cuLinkComplete && cuLinkDestroy; }
  bool has_external_memory() const {
    return cuDeviceGetUuid && cuImportExternalMemory && cuExternalMemoryGetMappedBuffer && cuDestroyExternalMemory;
  }
  bool has_external_semaphores() const {
    return cuImportExternalSemaphore && cuSignalExternalSemaphoresAsync && cuWaitExternalSemaphoresAsync &&
           cuDestroyExternalSemaphore;
  }
  bool has_graphs() const {
    return cuEventRecordWithFlags && cuStreamBeginCapture && cuStreamEndCapture && cuGraphInstantiateWithFlags &&
           cuGraphLaunch && cuGraphExecDestroy && cuGraphDestroy;
  }
};

}  // namespace spire::rt::cuda
