// runtime/cuda declares the driver ABI itself (cuda_driver_api.h) so it builds without the toolkit. Where
// the toolkit's headers exist, this checks each declared entry point against NVIDIA's PFN typedef of the
// function version cuGetProcAddress returns for CUDA 12.0: same return type and parameters, comparing
// enums and integers by size and signedness-free width, and handles as pointers.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda/cuda_driver_api.h"

#ifdef SPIRE_HAVE_CUDA_TYPEDEFS
// Capture our member types before cuda.h's macros (#define cuMemAlloc cuMemAlloc_v2, ...) can rename them.
namespace mine {
using Api = spire::rt::cuda::DriverApi;
#define SPIRE_MINE(name) using T_##name = decltype(Api::name);
SPIRE_MINE(cuInit)
SPIRE_MINE(cuDriverGetVersion)
SPIRE_MINE(cuGetErrorName)
SPIRE_MINE(cuGetErrorString)
SPIRE_MINE(cuDeviceGetCount)
SPIRE_MINE(cuDeviceGet)
SPIRE_MINE(cuDeviceGetName)
SPIRE_MINE(cuDeviceGetAttribute)
SPIRE_MINE(cuDeviceTotalMem)
SPIRE_MINE(cuDevicePrimaryCtxRetain)
SPIRE_MINE(cuDevicePrimaryCtxRelease)
SPIRE_MINE(cuCtxSetCurrent)
SPIRE_MINE(cuModuleLoadDataEx)
SPIRE_MINE(cuModuleGetFunction)
SPIRE_MINE(cuModuleUnload)
SPIRE_MINE(cuFuncGetAttribute)
SPIRE_MINE(cuMemAlloc)
SPIRE_MINE(cuMemFree)
SPIRE_MINE(cuMemcpyHtoDAsync)
SPIRE_MINE(cuMemcpyDtoHAsync)
SPIRE_MINE(cuMemcpyDtoDAsync)
SPIRE_MINE(cuMemcpyAsync)
SPIRE_MINE(cuMemHostAlloc)
SPIRE_MINE(cuMemFreeHost)
SPIRE_MINE(cuMemHostGetDevicePointer)
SPIRE_MINE(cuMemsetD32Async)
SPIRE_MINE(cuMemsetD8Async)
SPIRE_MINE(cuStreamCreate)
SPIRE_MINE(cuStreamDestroy)
SPIRE_MINE(cuStreamSynchronize)
SPIRE_MINE(cuEventCreate)
SPIRE_MINE(cuEventDestroy)
SPIRE_MINE(cuEventRecord)
SPIRE_MINE(cuEventSynchronize)
SPIRE_MINE(cuEventQuery)
SPIRE_MINE(cuEventElapsedTime)
SPIRE_MINE(cuLaunchKernel)
SPIRE_MINE(cuLaunchKernelEx)
SPIRE_MINE(cuEventRecordWithFlags)
SPIRE_MINE(cuStreamBeginCapture)
SPIRE_MINE(cuStreamEndCapture)
SPIRE_MINE(cuGraphInstantiateWithFlags)
SPIRE_MINE(cuGraphLaunch)
SPIRE_MINE(cuGraphExecDestroy)
SPIRE_MINE(cuGraphDestroy)
SPIRE_MINE(cuTensorMapEncodeTiled)
#undef SPIRE_MINE
// cuda.h defines this flag as a macro, which would rename ours too.
constexpr unsigned kMemHostAllocDeviceMap = spire::rt::cuda::CU_MEMHOSTALLOC_DEVICEMAP;
}  // namespace mine

#include <cuda.h>
#include <cudaTypedefs.h>

#include "tests/support/abi_shape.h"

namespace {

using spire::testing_support::abi::same_abi;

#define SPIRE_CHECK(name, pfn) static_assert(same_abi<mine::T_##name, pfn>, #name " differs from " #pfn);
SPIRE_CHECK(cuInit, PFN_cuInit_v2000)
SPIRE_CHECK(cuDriverGetVersion, PFN_cuDriverGetVersion_v2020)
SPIRE_CHECK(cuGetErrorName, PFN_cuGetErrorName_v6000)
SPIRE_CHECK(cuGetErrorString, PFN_cuGetErrorString_v6000)
SPIRE_CHECK(cuDeviceGetCount, PFN_cuDeviceGetCount_v2000)
SPIRE_CHECK(cuDeviceGet, PFN_cuDeviceGet_v2000)
SPIRE_CHECK(cuDeviceGetName, PFN_cuDeviceGetName_v2000)
SPIRE_CHECK(cuDeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000)
SPIRE_CHECK(cuDeviceTotalMem, PFN_cuDeviceTotalMem_v3020)
SPIRE_CHECK(cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000)
SPIRE_CHECK(cuDevicePrimaryCtxRelease, PFN_cuDevicePrimaryCtxRelease_v11000)
SPIRE_CHECK(cuCtxSetCurrent, PFN_cuCtxSetCurrent_v4000)
SPIRE_CHECK(cuModuleLoadDataEx, PFN_cuModuleLoadDataEx_v2010)
SPIRE_CHECK(cuModuleGetFunction, PFN_cuModuleGetFunction_v2000)
SPIRE_CHECK(cuModuleUnload, PFN_cuModuleUnload_v2000)
SPIRE_CHECK(cuFuncGetAttribute, PFN_cuFuncGetAttribute_v2020)
SPIRE_CHECK(cuMemAlloc, PFN_cuMemAlloc_v3020)
SPIRE_CHECK(cuMemFree, PFN_cuMemFree_v3020)
SPIRE_CHECK(cuMemcpyHtoDAsync, PFN_cuMemcpyHtoDAsync_v3020)
SPIRE_CHECK(cuMemcpyDtoHAsync, PFN_cuMemcpyDtoHAsync_v3020)
SPIRE_CHECK(cuMemcpyDtoDAsync, PFN_cuMemcpyDtoDAsync_v3020)
SPIRE_CHECK(cuMemcpyAsync, PFN_cuMemcpyAsync_v4000)
SPIRE_CHECK(cuMemHostAlloc, PFN_cuMemHostAlloc_v2020)
SPIRE_CHECK(cuMemFreeHost, PFN_cuMemFreeHost_v2000)
SPIRE_CHECK(cuMemHostGetDevicePointer, PFN_cuMemHostGetDevicePointer_v3020)
SPIRE_CHECK(cuMemsetD32Async, PFN_cuMemsetD32Async_v3020)
SPIRE_CHECK(cuMemsetD8Async, PFN_cuMemsetD8Async_v3020)
SPIRE_CHECK(cuStreamCreate, PFN_cuStreamCreate_v2000)
SPIRE_CHECK(cuStreamDestroy, PFN_cuStreamDestroy_v4000)
SPIRE_CHECK(cuStreamSynchronize, PFN_cuStreamSynchronize_v2000)
SPIRE_CHECK(cuEventCreate, PFN_cuEventCreate_v2000)
SPIRE_CHECK(cuEventDestroy, PFN_cuEventDestroy_v4000)
SPIRE_CHECK(cuEventRecord, PFN_cuEventRecord_v2000)
SPIRE_CHECK(cuEventSynchronize, PFN_cuEventSynchronize_v2000)
SPIRE_CHECK(cuEventQuery, PFN_cuEventQuery_v2000)
SPIRE_CHECK(cuEventElapsedTime, PFN_cuEventElapsedTime_v2000)
SPIRE_CHECK(cuLaunchKernel, PFN_cuLaunchKernel_v4000)
SPIRE_CHECK(cuLaunchKernelEx, PFN_cuLaunchKernelEx_v11060)
SPIRE_CHECK(cuEventRecordWithFlags, PFN_cuEventRecordWithFlags_v11010)
SPIRE_CHECK(cuStreamBeginCapture, PFN_cuStreamBeginCapture_v10010)
SPIRE_CHECK(cuStreamEndCapture, PFN_cuStreamEndCapture_v10000)
SPIRE_CHECK(cuGraphInstantiateWithFlags, PFN_cuGraphInstantiateWithFlags_v11040)
SPIRE_CHECK(cuGraphLaunch, PFN_cuGraphLaunch_v10000)
SPIRE_CHECK(cuGraphExecDestroy, PFN_cuGraphExecDestroy_v10000)
SPIRE_CHECK(cuGraphDestroy, PFN_cuGraphDestroy_v10000)
SPIRE_CHECK(cuTensorMapEncodeTiled, PFN_cuTensorMapEncodeTiled_v12000)
#undef SPIRE_CHECK

// Constants we declared, against cuda.h's.
static_assert(spire::rt::cuda::CU_TENSOR_MAP_DATA_TYPE_FLOAT16 == ::CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
static_assert(spire::rt::cuda::CU_TENSOR_MAP_DATA_TYPE_FLOAT32 == ::CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
static_assert(spire::rt::cuda::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 == ::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
static_assert(spire::rt::cuda::CU_TENSOR_MAP_INTERLEAVE_NONE == ::CU_TENSOR_MAP_INTERLEAVE_NONE);
static_assert(spire::rt::cuda::CU_TENSOR_MAP_SWIZZLE_NONE == ::CU_TENSOR_MAP_SWIZZLE_NONE);
static_assert(spire::rt::cuda::CU_TENSOR_MAP_SWIZZLE_128B == ::CU_TENSOR_MAP_SWIZZLE_128B);
static_assert(spire::rt::cuda::CU_TENSOR_MAP_L2_PROMOTION_L2_256B == ::CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
static_assert(spire::rt::cuda::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE == ::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
static_assert(spire::rt::cuda::kTensorMapBytes == sizeof(CUtensorMap) && alignof(CUtensorMap) >= 64);
static_assert(spire::rt::cuda::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION ==
              ::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
static_assert(sizeof(spire::rt::cuda::CUlaunchAttribute) == sizeof(::CUlaunchAttribute));
static_assert(offsetof(spire::rt::cuda::CUlaunchAttribute, value) == offsetof(::CUlaunchAttribute, value));
static_assert(sizeof(spire::rt::cuda::CUlaunchConfig) == sizeof(::CUlaunchConfig));
static_assert(offsetof(spire::rt::cuda::CUlaunchConfig, hStream) == offsetof(::CUlaunchConfig, hStream));
static_assert(offsetof(spire::rt::cuda::CUlaunchConfig, attrs) == offsetof(::CUlaunchConfig, attrs));
static_assert(offsetof(spire::rt::cuda::CUlaunchConfig, numAttrs) == offsetof(::CUlaunchConfig, numAttrs));
static_assert(spire::rt::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(spire::rt::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(spire::rt::cuda::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK == ::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
static_assert(spire::rt::cuda::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z == ::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
static_assert(spire::rt::cuda::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z == ::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
static_assert(spire::rt::cuda::CU_DEVICE_ATTRIBUTE_WARP_SIZE == ::CU_DEVICE_ATTRIBUTE_WARP_SIZE);
static_assert(spire::rt::cuda::CU_DEVICE_ATTRIBUTE_INTEGRATED == ::CU_DEVICE_ATTRIBUTE_INTEGRATED);
static_assert(spire::rt::cuda::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == ::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
static_assert(spire::rt::cuda::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK == ::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
static_assert(spire::rt::cuda::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK == ::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
static_assert(spire::rt::cuda::CU_FUNC_ATTRIBUTE_NUM_REGS == ::CU_FUNC_ATTRIBUTE_NUM_REGS);
static_assert(spire::rt::cuda::CU_JIT_INFO_LOG_BUFFER == ::CU_JIT_INFO_LOG_BUFFER);
static_assert(spire::rt::cuda::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES == ::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
static_assert(spire::rt::cuda::CU_JIT_ERROR_LOG_BUFFER == ::CU_JIT_ERROR_LOG_BUFFER);
static_assert(spire::rt::cuda::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES == ::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
static_assert(spire::rt::cuda::CU_STREAM_NON_BLOCKING == ::CU_STREAM_NON_BLOCKING);
static_assert(spire::rt::cuda::CU_EVENT_DISABLE_TIMING == ::CU_EVENT_DISABLE_TIMING);
static_assert(spire::rt::cuda::CU_EVENT_RECORD_EXTERNAL == ::CU_EVENT_RECORD_EXTERNAL);
static_assert(spire::rt::cuda::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL == ::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
static_assert(mine::kMemHostAllocDeviceMap == CU_MEMHOSTALLOC_DEVICEMAP);
static_assert(spire::rt::cuda::CUDA_ERROR_OUT_OF_MEMORY == ::CUDA_ERROR_OUT_OF_MEMORY);
static_assert(spire::rt::cuda::CUDA_ERROR_NOT_READY == ::CUDA_ERROR_NOT_READY);
static_assert(sizeof(spire::rt::cuda::CUdeviceptr) == sizeof(::CUdeviceptr));
static_assert(spire::rt::cuda::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD ==
              ::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD);
static_assert(sizeof(spire::rt::cuda::CudaExternalSemaphoreHandleDesc) == sizeof(::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC));
static_assert(sizeof(spire::rt::cuda::CudaExternalSemaphoreSignalParams) ==
              sizeof(::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS));
static_assert(sizeof(spire::rt::cuda::CudaExternalSemaphoreWaitParams) == sizeof(::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS));
static_assert(offsetof(spire::rt::cuda::CudaExternalSemaphoreHandleDesc, handle) ==
              offsetof(::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, handle));
static_assert(offsetof(spire::rt::cuda::CudaExternalSemaphoreSignalParams, flags) ==
              offsetof(::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, flags));
static_assert(offsetof(spire::rt::cuda::CudaExternalSemaphoreWaitParams, flags) ==
              offsetof(::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, flags));

}  // namespace

TEST(CudaAbi, DeclarationsMatchTheToolkitHeaders) {
  SUCCEED() << "checked at compile time against cuda.h " << CUDA_VERSION;
}
#else
TEST(CudaAbi, DeclarationsMatchTheToolkitHeaders) {
  GTEST_SKIP() << "cudaTypedefs.h not found at configure time: runtime/cuda's ABI declarations not cross-checked";
}
#endif
