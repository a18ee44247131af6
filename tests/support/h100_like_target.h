// A device described by data only, for tests that lower and compile kernels with no GPU present (PTX through
// ptxas, dumps): the bundle compiler's ptx:sm_90 target profile (an H100's limits: 48 KiB of workgroup memory,
// 2^31-1 workgroups in x) with 80 GiB of memory and without tensor cores, asynchronous copies and bf16, so that
// these tests see the SIMT kernels they were written for.
#pragma once

#include <string>

#include "bundle/compiler/target_profiles.h"

namespace spire::testing_support {

inline rt::DeviceInfo h100_like_target(std::string id = "compile-only:0") {
  rt::DeviceInfo d = bundle::target_profile("ptx:sm_90");
  d.id = std::move(id);
  d.name = "compile-only sm_90";
  d.memory_bytes = d.max_buffer_bytes = uint64_t(80) << 30;
  d.features = Features(Feature::Float16) | Feature::Float64 | Feature::Int64 |
               Feature::AtomicAddInt | Feature::AtomicAddF32 | Feature::SubgroupShuffle;
  return d;
}

}  // namespace spire::testing_support
