// The targets a bundle is compiled for, described by data (no device present): what `--targets` names.
//
//   spirv        any Vulkan 1.1 device: limits every desktop driver meets (lavapipe, NVIDIA, AMD, Intel):
//                256 invocations per workgroup, 32 KiB of workgroup memory, 65535 workgroups per dimension,
//                storage offsets aligned to 256 (the largest alignment Vulkan allows). Kernels needing float64,
//                int64, float16 or bfloat16 declare it and a device without it refuses them by name at load.
//   ptx          NVIDIA through CUDA, PTX for sm_75 (Turing) and newer: the driver JIT-compiles it for the GPU
//                present (and the runtime's module cache keeps the result).
//   ptx:sm_NN    PTX for compute capability NN and newer (ptx:sm_90 for Hopper only).
#pragma once

#include <string>
#include <vector>

#include "runtime/device.h"

namespace spire::bundle {

// Throws std::invalid_argument for an unknown name, listing the known ones.
rt::DeviceInfo target_profile(const std::string& name);
// "spirv,ptx" -> their profiles; every name checked.
std::vector<rt::DeviceInfo> target_profiles(const std::string& comma_list);

}  // namespace spire::bundle
