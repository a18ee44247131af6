// Where a plan's device memory goes, from the plan alone (no device): the buffers that live across steps, and the
// transient arena against the least any arena could be, so the planner's reuse can be judged. `spire run --stats`
// prints it per device; tests hold real models' arenas to a bound of that least.
#pragma once

#include <stdexcept>
#include <string>

#include "lowering/plan.h"

namespace spire::lowering {

struct MemoryReport {
  uint64_t weights = 0;         // parameters, optimizer state and constants: their own device buffers
  uint64_t inputs_outputs = 0;  // graph inputs and outputs: their own device buffers
  uint64_t arena = 0;           // the transient arena: intermediates and scratch sharing memory by lifetime
  uint64_t kept = 0;            // of the arena: what parameters-only launches computed, kept for every step
  uint64_t peak_live = 0;       // the transient bytes live at the worst launch (kept included): the least an arena
                                // holding them can be
  uint64_t without_reuse = 0;   // every transient's bytes summed: the arena if nothing shared memory
  // The allocations the arena takes on the device (runtime/arena_pieces.h: more than one where it exceeds the
  // device's largest allocation, max_allocation); 0 where it cannot be cut so.
  uint64_t arena_allocations = 1, max_allocation = 0;
  uint64_t total() const { return weights + inputs_outputs + arena; }
};

// `max_allocation`: the device's largest single allocation (rt::DeviceInfo::max_allocation_bytes; 0: no limit).
MemoryReport memory_report(const Plan& plan, uint64_t max_allocation = 0);

// A plan that cannot fit CompileOptions::memory_budget; needed is the least device memory spire can run it in.
struct MemoryBudgetError : std::runtime_error {
  MemoryBudgetError(const std::string& message, uint64_t needed) : std::runtime_error(message), needed(needed) {}
  uint64_t needed;
};

// Lowers `g` as lower() does, held to `budget` bytes of device memory (0: no limit). A plan over it that keeps the
// results of parameters-only launches is lowered again without keeping them (those launches then run every step:
// slower, but the arena holds only one step's values); a plan still over it throws MemoryBudgetError naming the least
// it needs and of what.
Plan lower_within_budget(const graph::Graph& g, const rt::DeviceInfo& info, const passes::PassPipeline* passes,
                         const TuningChoices* tuning, bool parameters_once, uint64_t budget,
                         Precision precision = Precision::Fp32);

// Lines for `--stats`: "memory on <device>: ..." with each part in MB.
std::string memory_text(const MemoryReport& m, const std::string& device);

}  // namespace spire::lowering
