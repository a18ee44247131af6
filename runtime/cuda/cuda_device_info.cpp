#include "runtime/cuda/cuda_device_info.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace spire::rt::cuda {

std::string bytes_text(uint64_t bytes) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double v = double(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

DeviceInfo describe_device(const Driver& d, int index) {
  const DriverApi& a = d.api;
  DeviceInfo info;
  info.id = fmt::format("cuda:{}", index);
  info.backend = Backend::Cuda;
  info.index = index;
  auto check = [&](CUresult r, const char* call) { cuda::check(d, r, info.id, call); };
  CUdevice dev = 0;
  check(a.cuDeviceGet(&dev, index), "cuDeviceGet");
  char name[256] = {};
  check(a.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  info.name = name;
  info.vendor = "NVIDIA";
  info.driver = driver_version_text(d.version);
  auto attr = [&](CUdevice_attribute at) {
    int v = 0;
    cuda::check(d, a.cuDeviceGetAttribute(&v, at, dev), info.id, "cuDeviceGetAttribute", fmt::format("(attribute {})", at));
    return v;
  };
  info.type = attr(CU_DEVICE_ATTRIBUTE_INTEGRATED) ? DeviceType::IntegratedGpu : DeviceType::DiscreteGpu;
  info.subgroup_size = uint32_t(attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  // Shared memory per block: 48 KiB declared statically, up to the opt-in limit (227 KiB on an H100) as dynamic
  // shared memory, which the PTX backend uses past 48 KiB (backends/ptx/ptx_shared_layout.h).
  info.shared_memory_bytes = uint32_t(std::max(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
                                               attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)));
  info.max_workgroup_invocations = uint32_t(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  info.max_workgroup_size = {uint32_t(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)),
                             uint32_t(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)),
                             uint32_t(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z))};
  info.max_workgroup_count = {uint32_t(attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)),
                              uint32_t(attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)),
                              uint32_t(attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z))};
  size_t total = 0;
  check(a.cuDeviceTotalMem(&total, dev), "cuDeviceTotalMem");
  info.memory_bytes = total;
  info.max_buffer_bytes = total;  // CUDA has no per-binding limit: a kernel takes raw pointers
  info.max_kernel_buffers = 256;  // 8-byte pointers in the 4 KiB of kernel parameters, with room for scalars
  // Element alignment is all a CUDA kernel needs; 16 keeps views usable by vectorized kernels as well, and is what
  // a tensor map's start must be aligned to (CudaCommandStream::encode_tensor_map relies on it).
  info.min_storage_offset_alignment = 16;
  info.compute_capability = uint32_t(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
                                     attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  // Every GPU the PTX backend targets (sm_75 and newer) has native f16 conversion, f64, 64-bit integers and
  // global atomic add on 32-bit ints and f32, and warp shuffles (shfl.sync).
  Features all = Features(Feature::Float16) | Feature::Float64 | Feature::Int64 |
                      Feature::AtomicAddInt | Feature::AtomicAddF32 | Feature::SubgroupShuffle |
               Feature::BFloat16;
  // Tensor cores through wmma on bf16 fragments, and cp.async: sm_80 (Ampere) and newer.
  if (info.compute_capability >= 80) all |= Features(Feature::CooperativeMatrix) | Feature::AsyncCopy;
  // wgmma: compute capability 9.0 alone (sm_90a code runs nowhere else; Blackwell has other instructions).
  if (info.compute_capability == 90) all |= Feature::WarpgroupMatrix;
  // The tensor memory accelerator and mbarrier transaction counts: sm_90 and newer, with a driver that encodes maps.
  if (info.compute_capability >= 90 && a.cuTensorMapEncodeTiled) all |= Feature::TensorCopy;
  info.features = rt::apply_feature_mask(all);
  return info;
}

}  // namespace spire::rt::cuda
