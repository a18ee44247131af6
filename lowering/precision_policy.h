// What the precision policy (base/precision.h) means on one device: the graph lowering runs (bf16 and f16 store it in
// half), the limits the heavy templates see, and the line that tells the user when the device cannot honour it. One
// place decides all three, so the plan, the tuner's keys, --stats and the kernels never disagree.
#pragma once

#include <string>

#include "base/precision.h"
#include "ir/graph/graph.h"
#include "kernels/tuning_config.h"
#include "runtime/device.h"

namespace spire::lowering {

// Whether `info` multiplies TF32 on tensor cores: PTX's wmma on sm_80 and newer (cuda:N with cooperative matrices).
// Vulkan's cooperative matrices have no TF32 type.
bool has_tf32_matrices(const rt::DeviceInfo& info);

// Whether `info` stores and converts the half type of `p` (bf16: Feature::BFloat16; f16: Feature::Float16, which is
// f16 arithmetic too). False for fp32 and tf32.
bool has_half_storage(const rt::DeviceInfo& info, Precision p);

// The graph lower() runs for `g` under `p` on `info`: under bf16 and f16, where the device has the half type,
// passes::store_in_half (half storage with f32 sums, autocast's f32 ops in f32, as passes/half_storage.h lists them;
// the inputs, parameters and outputs keep their dtypes); otherwise `g` as it is.
graph::Graph graph_under(const graph::Graph& g, const rt::DeviceInfo& info, Precision p);

// `limits` (limits_of(info)) under `p`: tf32 turns Limits::tf32 on where the device has TF32 matrices. (bf16 and f16
// change the graph, graph_under, not the limits: the templates take half operands as they do in a half model.)
heavy::Limits limits_under(heavy::Limits limits, const rt::DeviceInfo& info, Precision p);

// What runs in place of the policy on this device, as one line ("vulkan:0 has no TF32 cooperative matrices; tf32
// runs as fp32", "vulkan:0 has no bfloat16 storage; bf16 runs as fp32"); empty where it runs as asked.
std::string precision_note(const rt::DeviceInfo& info, Precision p);

}  // namespace spire::lowering
