// Pass 5, memory planning: transient buffers (intermediates and scratch) share one arena; each gets a byte
// offset, aligned to the device's minimum storage-buffer offset alignment, such that two buffers overlap in
// memory only if their lifetimes (first to last launch touching them) are disjoint. Persistent buffers
// (leaves, constants, outputs) keep their own device buffers. What a parameters-only launch writes for the other
// launches (parameter_launches.h) lives for the whole step: the steps that skip that launch read it.
#pragma once

#include "lowering/plan.h"

namespace spire::lowering {

// The alignment of every transient buffer's arena offset on a device: its minimum storage-buffer offset alignment, and
// 16 bytes at least, so every element type stays naturally aligned whatever the device reports.
uint64_t arena_alignment(const rt::DeviceInfo& info);

// Fills first_use/last_use of every buffer and arena_offset of every transient one, plan.arena_bytes and
// plan.arena_alignment.
void plan_memory(Plan& plan, const rt::DeviceInfo& info);

// Checks the invariant above; returns "" or a message naming two conflicting buffers (used by tests).
std::string check_memory_plan(const Plan& plan);

}  // namespace spire::lowering
