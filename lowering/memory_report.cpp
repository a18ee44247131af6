#include "lowering/memory_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "lowering/parameter_launches.h"
#include "runtime/arena_pieces.h"

namespace spire::lowering {

MemoryReport memory_report(const Plan& plan, uint64_t max_allocation) {
  MemoryReport m;
  m.arena = plan.arena_bytes;
  m.max_allocation = max_allocation;
  std::vector<rt::ArenaRange> ranges;
  const std::vector<bool> kept = kept_across_steps(plan);
  // Bytes live at each launch, from the lifetimes plan_memory() filled in (kept buffers span every launch there).
  std::vector<uint64_t> live(plan.launches.size(), 0);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlannedBuffer& b = plan.buffers[i];
    switch (b.role) {
      case BufferRole::Parameter:
      case BufferRole::State:
      case BufferRole::Constant:
        m.weights += b.bytes();
        continue;
      case BufferRole::Input:
      case BufferRole::Output:
        m.inputs_outputs += b.bytes();
        continue;
      case BufferRole::Transient:
        break;
    }
    if (b.first_use < 0 || b.view_of >= 0) continue;  // never bound, or a window of another: no memory of its own
    ranges.push_back({uint64_t(b.arena_offset), (b.bytes() + 3) / 4 * 4});  // (bound as whole words)
    m.without_reuse += b.bytes();
    if (kept[i]) m.kept += b.bytes();
    for (int32_t l = b.first_use; l <= b.last_use; ++l) live[size_t(l)] += b.bytes();
  }
  if (!live.empty()) m.peak_live = *std::max_element(live.begin(), live.end());
  try {
    m.arena_allocations = m.arena ? rt::arena_pieces(ranges, m.arena, max_allocation).size() : 0;
  } catch (const std::length_error&) {
    m.arena_allocations = 0;
  }
  return m;
}

Plan lower_within_budget(const graph::Graph& g, const rt::DeviceInfo& info, const passes::PassPipeline* passes,
                         const TuningChoices* tuning, bool parameters_once, uint64_t budget, Precision precision) {
  Plan plan = lower(g, info, passes, tuning, parameters_once, precision);
  if (budget == 0 || memory_report(plan).total() <= budget) return plan;
  if (parameters_once && memory_report(plan).kept > 0) {
    plan = lower(g, info, passes, tuning, false, precision);
    if (memory_report(plan).total() <= budget) return plan;
  }
  const MemoryReport m = memory_report(plan);
  auto mb = [](uint64_t bytes) { return fmt::format("{:.2f} MB", double(bytes) / 1e6); };
  throw MemoryBudgetError(
      fmt::format("the memory budget of {} bytes ({}) is too small on {}: the model needs at least {} bytes ({}: "
                  "weights {}, inputs and outputs {}, a transient arena of {} with every launch run every step)",
                  budget, mb(budget), info.id, m.total(), mb(m.total()), mb(m.weights), mb(m.inputs_outputs),
                  mb(m.arena)),
      m.total());
}

std::string memory_text(const MemoryReport& m, const std::string& device) {
  auto mb = [](uint64_t bytes) { return fmt::format("{:.2f} MB", double(bytes) / 1e6); };
  return fmt::format(
      "memory on {}: {} in all\n"
      "  weights (parameters, state, constants)   {}\n"
      "  inputs and outputs                       {}\n"
      "  transient arena                          {} ({} of it kept results of parameters-only launches){}\n"
      "  values live at the worst launch          {} (the least an arena can be; {:.2f}x of it used)\n"
      "  transients without reuse                 {}\n",
      device, mb(m.total()), mb(m.weights), mb(m.inputs_outputs), mb(m.arena), mb(m.kept),
      m.arena_allocations > 1 ? fmt::format(", in {} allocations: the device's largest is {}", m.arena_allocations,
                                            mb(m.max_allocation))
                              : "",
      mb(m.peak_live), m.peak_live ? double(m.arena) / double(m.peak_live) : 1.0, mb(m.without_reuse));
}

}  // namespace spire::lowering
