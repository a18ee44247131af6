#include "runtime/launch_hazards.h"

#include <fmt/format.h>

namespace spire::rt {

std::vector<BufferUse> launch_uses(const KernelInterface& kernel, std::span<const BufferView> views) {
  if (views.size() != kernel.buffers.size())
    throw Error(fmt::format("kernel '{}' takes {} buffers, {} were bound", kernel.name, kernel.buffers.size(), views.size()));
  std::vector<BufferUse> uses;
  uses.reserve(views.size());
  for (size_t i = 0; i < views.size(); ++i) uses.push_back({views[i], kernel.buffers[i].access});
  return uses;
}

bool LaunchHazards::any_overlap(const std::vector<Range>& set, const Range& r) {
  for (const Range& s : set)
    if (s.overlaps(r)) return true;
  return false;
}

bool LaunchHazards::conflicts(std::span<const BufferUse> uses) const {
  for (const BufferUse& u : uses) {
    if (!u.view.buffer) continue;
    const Range r{u.view.buffer, u.view.offset, u.view.offset + u.view.bytes()};
    if (any_overlap(writes_, r)) return true;                                   // RAW, WAW
    if (u.access != Access::Read && any_overlap(reads_, r)) return true;  // WAR
  }
  return false;
}

void LaunchHazards::add(std::span<const BufferUse> uses) {
  for (const BufferUse& u : uses) {
    if (!u.view.buffer) continue;
    const Range r{u.view.buffer, u.view.offset, u.view.offset + u.view.bytes()};
    if (u.access != Access::Write) reads_.push_back(r);
    if (u.access != Access::Read) writes_.push_back(r);
  }
}

void LaunchHazards::clear() {
  reads_.clear();
  writes_.clear();
}

bool LaunchHazards::dispatch(CommandStream& stream, const Kernel& kernel, std::span<const BufferView> views,
                             const ScalarArgs& scalars, Grid grid) {
  const std::vector<BufferUse> uses = launch_uses(kernel.interface(), views);
  const bool barrier = conflicts(uses);
  if (barrier) {
    stream.barrier();
    clear();
  }
  stream.dispatch(kernel, views, scalars, grid);
  add(uses);
  return barrier;
}

}  // namespace spire::rt
