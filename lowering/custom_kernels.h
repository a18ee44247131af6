// The kernels of custom ops (ops registered at run time with graph::register_user_op), and their lowering.
//
// A custom op's kernel follows one launch contract whichever way it is written:
//   * buffers: the op's inputs in order (read), then its result (write), in device types (lowering_context.h);
//   * one u32 scalar, the result's element count (push constant at offset 0 / the first kernel parameter);
//   * ceil(elements / elements_per_workgroup) workgroups, unless `groups` says otherwise.
// It is written either with the kernel builder (a function of the node's shapes, so it may bake them in, as
// built-in templates do) or as a finished SPIR-V module (GLSL compiled by shaderc in extend/), which only
// Vulkan devices can run: lowering such an op for a CUDA device is refused with a message naming the op, the
// device and what to use instead.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/kernel/kernel.h"
#include "kernels/tuning_config.h"
#include "lowering/lowering_context.h"
#include "runtime/device.h"

namespace spire::lowering {

// What a kernel-builder kernel is built for: one node, its input types, the device's limits, and (for an op that
// declares configs) the config to build: the tuner's choice, else the first.
struct CustomKernelRequest {
  const graph::Node& node;
  std::span<const graph::TensorType> inputs;
  const rt::DeviceInfo& device;
  const heavy::Config* config = nullptr;
};

struct CustomKernel {
  // Exactly one of the two: a kernel-builder function, or a SPIR-V module (with its workgroup size).
  std::function<kir::Kernel(const CustomKernelRequest&)> build;
  std::vector<uint32_t> spirv_module;
  std::array<uint32_t, 3> spirv_workgroup_size{64, 1, 1};
  // A SPIR-V kernel that declares configs: one module (and workgroup size) per config, in the order of `configs`
  // (spirv_module then holds the first's).
  std::vector<std::vector<uint32_t>> spirv_config_modules;
  std::vector<std::array<uint32_t, 3>> spirv_config_workgroup_sizes;
  uint32_t elements_per_workgroup = 0;  // 0: one element per invocation (the kernel's workgroup size)
  std::function<uint64_t(const CustomKernelRequest&)> groups;  // optional: overrides the element rule
  std::string source;  // where the kernel came from, for messages ("relu.comp", "C++ kernel builder")
  // As triton.autotune's configs: the points the tuner may time (tuning key "custom.<op>"); the first is used when
  // nothing was tuned. Empty: one kernel, nothing to tune. A SPIR-V kernel has one module per config (above).
  std::vector<heavy::Config> configs;
};

// Registers the kernel of custom op `op`; throws graph::GraphError when the op is not a custom op, already has a
// kernel, or `k` holds neither or both kinds of kernel. Like register_user_op: for start-up only.
void register_custom_kernel(graph::OpKind op, CustomKernel k);
const CustomKernel* custom_kernel(graph::OpKind op);  // nullptr: none registered

// The kernel a launch of custom op node `n` uses (a prebuilt one carries the module), and its workgroup count.
kir::Kernel custom_kernel_for(const CustomKernel& ck, const CustomKernelRequest& request);
uint64_t custom_kernel_groups(const CustomKernel& ck, const CustomKernelRequest& request, const kir::Kernel& k);

struct TunableOp;
// Node v (a custom op whose kernel declares configs) as a tunable node for `device`; nullopt for one without configs.
std::optional<TunableOp> tunable_custom(const graph::Graph& g, graph::Value v, const rt::DeviceInfo& device);

}  // namespace spire::lowering
