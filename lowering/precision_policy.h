// What the precision policy (base/precision.h) means on one device: the limits the heavy templates see and the line
// that tells the user when the device cannot honour it. One place decides both, so the plan, --stats and the kernels
// never disagree.
#pragma once

#include <string>

#include "base/precision.h"
#include "kernels/tuning_config.h"
#include "runtime/device.h"

namespace spire::lowering {

// Whether `info` multiplies TF32 on tensor cores: PTX's wmma on sm_80 and newer (cuda:N with cooperative matrices).
// Vulkan's cooperative matrices have no TF32 type.
bool has_tf32_matrices(const rt::DeviceInfo& info);

// `limits` (limits_of(info)) under `p`: tf32 turns Limits::tf32 on where the device has TF32 matrices. Throws
// std::invalid_argument for bf16 and f16, which the lowering does not run yet.
heavy::Limits limits_under(heavy::Limits limits, const rt::DeviceInfo& info, Precision p);

// What runs in place of the policy on this device, as one line ("vulkan:0 has no TF32 cooperative matrices; tf32
// runs as fp32"); empty where it runs as asked.
std::string precision_note(const rt::DeviceInfo& info, Precision p);

}  // namespace spire::lowering
