#include "lowering/device_plan.h"

#include <fmt/format.h>

#include "backends/compile_kernel.h"

namespace spire::lowering {

namespace {

std::string nodes_using(const Plan& p, size_t kernel) {
  std::string s;
  int shown = 0;
  for (const Launch& l : p.launches)
    if (size_t(l.kernel) == kernel && shown++ < 3) s += (s.empty() ? "" : ", ") + l.node;
  return s;
}

}  // namespace

rt::DevicePlan to_device_plan(const Plan& plan, const rt::DeviceInfo& target) {
  rt::DevicePlan p;
  p.format = target.backend == rt::Backend::Cuda ? rt::BinaryFormat::Ptx : rt::BinaryFormat::Spirv;
  p.ptx_sm = target.compute_capability;
  p.target = target.id;
  p.arena_bytes = plan.arena_bytes;
  for (const PlannedBuffer& pb : plan.buffers) {
    rt::BufferSpec s;
    s.name = pb.slot.name;
    s.type = pb.slot.type;
    s.elements = uint64_t(pb.slot.elements);
    s.role = pb.role;
    s.arena_offset = !pb.persistent() && pb.first_use >= 0 ? pb.arena_offset : -1;
    s.fill = pb.fill;
    p.buffers.push_back(std::move(s));
  }
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    try {
      p.kernels.push_back(backends::compile_kernel(plan.kernels[k], target));
    } catch (const rt::MissingFeature& e) {
      throw rt::MissingFeature(fmt::format("{} (needed by {})", e.what(), nodes_using(plan, k)));
    } catch (const std::exception& e) {
      throw rt::Error(fmt::format("compiling kernel '{}' (for {}) for {}: {}", plan.kernels[k].name,
                                  nodes_using(plan, k), target.id, e.what()));
    }
  }
  for (const Launch& l : plan.launches) {
    rt::LaunchSpec s;
    s.kernel = uint32_t(l.kernel);
    for (int32_t b : l.buffers) s.buffers.push_back(uint32_t(b));
    s.scalars = l.scalars.bytes();
    s.scalars.resize(plan.kernels[size_t(l.kernel)].scalar_block_bytes(), 0);
    s.groups = l.groups;
    s.node = l.node;
    s.parameters_only = l.parameters_only;
    p.launches.push_back(std::move(s));
  }
  for (const StateCopy& c : plan.copies) p.copies.push_back({uint32_t(c.from), uint32_t(c.to)});
  return p;
}

}  // namespace spire::lowering
