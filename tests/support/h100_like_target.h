// A device described by data only: the limits and features of an H100 (sm_90, 48 KiB of workgroup memory,
// 2^31-1 workgroups in x). Tests lower and compile kernels for it with no GPU present (PTX through ptxas, dumps).
#pragma once

#include <string>

#include "runtime/device.h"

namespace spire::testing_support {

inline rt::DeviceInfo h100_like_target(std::string id = "compile-only:0") {
  rt::DeviceInfo d;
  d.id = std::move(id);
  d.backend = rt::Backend::Cuda;
  d.name = "compile-only sm_90";
  d.vendor = "NVIDIA";
  d.type = rt::DeviceType::DiscreteGpu;
  d.subgroup_size = 32;
  d.shared_memory_bytes = 49152;
  d.max_workgroup_invocations = 1024;
  d.max_workgroup_size = {1024, 1024, 64};
  d.max_workgroup_count = {2147483647u, 65535, 65535};
  d.memory_bytes = d.max_buffer_bytes = uint64_t(80) << 30;
  d.max_kernel_buffers = 256;
  d.min_storage_offset_alignment = 16;
  d.compute_capability = 90;
  d.features = kir::Features(kir::Feature::Float16) | kir::Feature::Float64 | kir::Feature::Int64 |
               kir::Feature::AtomicAddInt | kir::Feature::AtomicAddF32 | kir::Feature::SubgroupShuffle;
  return d;
}

}  // namespace spire::testing_support
