#include "lowering/parameter_launches.h"

#include <cstddef>

namespace spire::lowering {

namespace {

bool reads(kir::Access a) { return a != kir::Access::Write; }
bool writes(kir::Access a) { return a != kir::Access::Read; }

// Calls f(buffer, access) for each buffer a launch binds: for a window (PlannedBuffer::view_of), the buffer whose
// memory it is, so that a launch reading a window of what a parameters-only launch computed reads that result, which
// must then be kept across steps.
template <class F>
void for_each_binding(const Plan& plan, const Launch& l, F&& f) {
  const kir::Kernel& k = plan.kernels.at(size_t(l.kernel));
  for (size_t i = 0; i < l.buffers.size() && i < k.buffers.size(); ++i) {
    const size_t b = size_t(l.buffers[i]);
    const int32_t of = plan.buffers[b].view_of;
    f(of >= 0 ? size_t(of) : b, k.buffers[i].access);
  }
}

}  // namespace

void mark_parameter_launches(Plan& plan) {
  const size_t n = plan.buffers.size();
  // Fixed inputs: parameters and constants that neither a launch nor a state update writes.
  std::vector<bool> written(n, false);
  for (const Launch& l : plan.launches)
    for_each_binding(plan, l, [&](size_t b, kir::Access a) { written[b] = written[b] || writes(a); });
  for (const StateCopy& c : plan.copies) written[size_t(c.to)] = true;
  std::vector<bool> fixed(n, false);
  for (size_t b = 0; b < n; ++b) {
    const BufferRole r = plan.buffers[b].role;
    fixed[b] = (r == BufferRole::Parameter || r == BufferRole::Constant) && !written[b];
  }
  // Every launch is a candidate until shown otherwise; dropping one can disqualify the launches reading its results
  // and the other writers of what it writes, so repeat until nothing changes.
  std::vector<bool> candidate(plan.launches.size(), true);
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<bool> derived(n, false);  // written by an earlier candidate
    for (size_t i = 0; i < plan.launches.size(); ++i) {
      if (!candidate[i]) continue;
      bool ok = true;
      for_each_binding(plan, plan.launches[i], [&](size_t b, kir::Access a) {
        if (reads(a) && !fixed[b] && !derived[b]) ok = false;
        if (writes(a) && plan.buffers[b].role != BufferRole::Transient) ok = false;
      });
      if (!ok) {
        candidate[i] = false;
        changed = true;
        continue;
      }
      for_each_binding(plan, plan.launches[i], [&](size_t b, kir::Access a) {
        if (writes(a)) derived[b] = true;
      });
    }
    // An intermediate that a launch running every step also writes (a zero fill before accumulating products) would
    // not hold its value from one step to the next.
    std::vector<bool> rewritten(n, false);
    for (size_t i = 0; i < plan.launches.size(); ++i)
      if (!candidate[i])
        for_each_binding(plan, plan.launches[i], [&](size_t b, kir::Access a) {
          if (writes(a)) rewritten[b] = true;
        });
    for (size_t i = 0; i < plan.launches.size(); ++i) {
      if (!candidate[i]) continue;
      bool clash = false;
      for_each_binding(plan, plan.launches[i],
                       [&](size_t b, kir::Access a) { clash = clash || (writes(a) && rewritten[b]); });
      if (clash) {
        candidate[i] = false;
        changed = true;
      }
    }
  }
  for (size_t i = 0; i < plan.launches.size(); ++i) plan.launches[i].parameters_only = candidate[i];
}

std::vector<bool> kept_across_steps(const Plan& plan) {
  const size_t n = plan.buffers.size();
  std::vector<bool> by_once(n, false), by_every(n, false);
  for (const Launch& l : plan.launches)
    for_each_binding(plan, l, [&](size_t b, kir::Access a) {
      if (l.parameters_only && writes(a)) by_once[b] = true;
      if (!l.parameters_only) by_every[b] = true;
    });
  std::vector<bool> kept(n, false);
  for (size_t b = 0; b < n; ++b) kept[b] = by_once[b] && by_every[b] && !plan.buffers[b].persistent();
  return kept;
}

}  // namespace spire::lowering
