// Custom ops: the registry of their kernels and their lowering (custom_kernels.h).
#include <fmt/format.h>

#include <map>
#include <mutex>

#include "ir/graph/op_table.h"
#include "lowering/custom_kernels.h"
#include "lowering/op_lowering.h"
#include "lowering/tunable.h"

namespace spire::lowering {

namespace {

std::map<graph::OpKind, CustomKernel>& registry() {
  static std::map<graph::OpKind, CustomKernel> r;
  return r;
}
std::mutex registry_mutex;

// The contract of custom_kernels.h, checked on the kernel a user's function built.
void check_contract(const kir::Kernel& k, const CustomKernelRequest& r, const std::string& source) {
  auto fail = [&](const std::string& what) {
    return graph::GraphError(fmt::format("custom op {} (node '{}'): its kernel '{}' from {} {}",
                                         graph::op_name(r.node.op), r.node.name, k.name, source, what));
  };
  if (k.buffers.size() != r.inputs.size() + 1)
    throw fail(fmt::format("declares {} buffers; it must declare {} (the {} inputs, then the result)", k.buffers.size(),
                           r.inputs.size() + 1, r.inputs.size()));
  for (size_t i = 0; i < r.inputs.size(); ++i)
    if (k.buffers[i].elem != device_type(r.inputs[i].dtype))
      throw fail(fmt::format("declares buffer {} as {}, but input {} is {}", i, dtype_name(k.buffers[i].elem), i,
                             r.inputs[i].to_string()));
  if (k.buffers.back().elem != device_type(r.node.type.dtype))
    throw fail(fmt::format("declares its result buffer as {}, but the result is {}", dtype_name(k.buffers.back().elem),
                           r.node.type.to_string()));
  if (k.scalars.size() != 1 || k.scalars[0].type != kir::Type::U32)
    throw fail("must declare exactly one scalar, the u32 element count of the result");
}

}  // namespace

void register_custom_kernel(graph::OpKind op, CustomKernel k) {
  std::lock_guard lock(registry_mutex);
  const std::string name(graph::op_name(op));
  if (!graph::is_user_op(op)) throw graph::GraphError(fmt::format("op '{}' is built in: it has its own lowering", name));
  if (bool(k.build) == !k.spirv_module.empty())
    throw graph::GraphError(fmt::format("custom op '{}': give exactly one kernel, a kernel-builder function or a SPIR-V module", name));
  if (!k.configs.empty() && !k.build &&
      (k.spirv_config_modules.size() != k.configs.size() || k.spirv_config_workgroup_sizes.size() != k.configs.size()))
    throw graph::GraphError(
        fmt::format("custom op '{}': a SPIR-V kernel with configs needs one module per config", name));
  if (!registry().emplace(op, std::move(k)).second)
    throw graph::GraphError(fmt::format("custom op '{}' already has a kernel", name));
}

const CustomKernel* custom_kernel(graph::OpKind op) {
  std::lock_guard lock(registry_mutex);
  auto it = registry().find(op);
  return it == registry().end() ? nullptr : &it->second;
}

kir::Kernel custom_kernel_for(const CustomKernel& ck, const CustomKernelRequest& r) {
  const std::string op(graph::op_name(r.node.op));
  if (!ck.spirv_module.empty()) {
    if (r.device.backend != rt::Backend::Vulkan)
      throw graph::GraphError(fmt::format(
          "custom op {} (node '{}') has only a GLSL kernel ({}), which runs on Vulkan devices; {} cannot run it. Use "
          "a vulkan:N device (`spire devices` lists them), or give the op a kernel-builder kernel",
          op, r.node.name, ck.source, r.device.id));
    // The module of the config asked for (the first where none is).
    size_t which = 0;
    if (r.config)
      for (size_t i = 0; i < ck.configs.size(); ++i)
        if (ck.configs[i] == *r.config) which = i;
    const bool by_config = !ck.spirv_config_modules.empty();
    kir::Kernel k;
    k.name = by_config ? fmt::format("{}_{}", op, which) : op;
    k.workgroup_size = by_config ? ck.spirv_config_workgroup_sizes[which] : ck.spirv_workgroup_size;
    for (size_t i = 0; i < r.inputs.size(); ++i)
      k.buffers.push_back({fmt::format("in{}", i), device_type(r.inputs[i].dtype), kir::Access::Read});
    k.buffers.push_back({"out", device_type(r.node.type.dtype), kir::Access::Write});
    k.scalars.push_back({"n", kir::Type::U32});
    for (const kir::BufferParam& b : k.buffers)
      if (b.elem == kir::Type::F64) k.features |= kir::Feature::Float64;
    k.spirv_module = by_config ? ck.spirv_config_modules[which] : ck.spirv_module;
    return k;
  }
  kir::Kernel k = ck.build(r);
  if (k.prebuilt()) throw graph::GraphError(fmt::format("custom op {}: its kernel builder returned a prebuilt module", op));
  std::string problem = kir::verify(k);
  if (!problem.empty())
    throw graph::GraphError(fmt::format("custom op {} (node '{}'): its kernel '{}' is malformed: {}", op, r.node.name, k.name, problem));
  check_contract(k, r, ck.source);
  return k;
}

uint64_t custom_kernel_groups(const CustomKernel& ck, const CustomKernelRequest& r, const kir::Kernel& k) {
  if (ck.groups) return ck.groups(r);
  const uint64_t per_group = ck.elements_per_workgroup ? ck.elements_per_workgroup : k.workgroup_invocations();
  return groups_for(r.node.type.numel(), int64_t(per_group));
}

namespace {

const CustomKernel& kernel_of(const graph::Node& n) {
  const CustomKernel* ck = custom_kernel(n.op);
  if (!ck)
    throw graph::GraphError(fmt::format("custom op {} (node '{}') has no kernel: register one (or load its op file) "
                                        "before compiling for a device",
                                        graph::op_name(n.op), n.name));
  return *ck;
}

}  // namespace

namespace {

// Node v as a TunableOp whatever its kernel: its configs are the candidates, the first the heuristic; an op
// without configs has none and builds its one kernel (request.config null). Lowering and the tuner both go
// through it, so what is timed is what is launched.
TunableOp custom_op_of(const graph::Graph& g, graph::Value v, const rt::DeviceInfo& device) {
  const graph::Node& n = g.node(v);
  const CustomKernel& ck = kernel_of(n);
  std::vector<graph::TensorType> types;
  std::string shape;
  for (graph::Value in : n.inputs) {
    types.push_back(g.type(in));
    shape += (shape.empty() ? "" : "_") + graph::shape_to_string(g.type(in).shape);
  }
  TunableOp op;
  op.key = {fmt::format("custom.{}", graph::op_name(n.op)), shape, std::string(graph::dtype_name(n.type.dtype))};
  if (!ck.configs.empty()) op.heuristic = ck.configs.front();
  op.candidates = ck.configs;
  // The program is built later (by lowering or the tuner): it copies what it needs, holding no graph reference.
  op.build = [&ck, node = n, types, device, buffers = io_buffers(g, v)](const heavy::Config& c) {
    const CustomKernelRequest request{node, types, device, ck.configs.empty() ? nullptr : &c};
    kir::Kernel k = custom_kernel_for(ck, request);
    const uint64_t groups = custom_kernel_groups(ck, request, k);
    KernelProgram p = single_kernel_program(buffers, std::move(k), groups);
    p.launches.at(0).scalars.u32(uint32_t(node.type.numel()));
    return p;
  };
  return op;
}

}  // namespace

std::optional<TunableOp> tunable_custom(const graph::Graph& g, graph::Value v, const rt::DeviceInfo& device) {
  TunableOp op = custom_op_of(g, v, device);
  if (op.candidates.empty()) return std::nullopt;
  return op;
}

void lower_custom(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return custom_op_of(ctx.graph(), v, ctx.device()); });
}

}  // namespace spire::lowering
