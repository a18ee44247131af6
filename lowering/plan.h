// The plan: what lowering decided, before any device work. Buffers (with the values living in each),
// the distinct kernels, the launches in order, and the state-update copies that end each step.
//
// to_device_plan() (device_plan.h) compiles its kernels into the device plan that the runtime's executor runs;
// plan_text() shows it to the user.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/precision.h"
#include "ir/graph/graph.h"
#include "ir/kernel/kernel.h"
#include "lowering/lowering_context.h"
#include "passes/pipeline.h"
#include "runtime/device.h"
#include "runtime/device_plan.h"

namespace spire::lowering {

// Why a buffer exists (runtime/device_plan.h): the plan's buffers keep their roles in the device plan.
using rt::BufferRole;
using rt::buffer_role_name;

struct PlannedBuffer {
  BufferSlot slot;                  // name, device element type, element count
  BufferRole role = BufferRole::Transient;
  std::vector<std::string> values;  // node names of the values stored here (more than one: aliases)
  std::optional<double> fill;       // Constant and State: the value every element starts with
  int32_t first_use = -1;           // launch indices (inclusive); -1: no launch touches it
  int32_t last_use = -1;
  int64_t arena_offset = -1;        // Transient: byte offset in the arena (memory_plan.cpp)
  // A window into another transient buffer (a contiguous slice, LoweringContext::view): it lives at that buffer's
  // arena offset plus view_offset bytes, and keeps that buffer alive while it is used.
  int32_t view_of = -1;
  uint64_t view_offset = 0;

  uint64_t bytes() const { return uint64_t(slot.elements) * dtype_bytes(slot.type); }
  bool persistent() const { return role != BufferRole::Transient; }
};

// A value the user reaches by name: a leaf for set(), an output / parameter / state for get().
struct NamedValue {
  int32_t buffer = -1;
  graph::TensorType type;
  graph::OpKind kind = graph::OpKind::Input;  // Input, Parameter, State for leaves; the producer for outputs
};

struct StateCopy {
  int32_t from = -1;  // buffer of the new value
  int32_t to = -1;    // buffer of the parameter or state
  std::string target; // its name
};

struct Plan {
  std::vector<PlannedBuffer> buffers;
  std::vector<kir::Kernel> kernels;   // distinct kernels (deduplicated by their text)
  std::vector<Launch> launches;       // in execution order; a barrier before each that depends on one since the last
  std::vector<StateCopy> copies;      // after the launches, in the same stream
  std::map<std::string, NamedValue> leaves;   // Input, Parameter and State leaves by node name
  std::map<std::string, NamedValue> outputs;  // graph outputs by output name
  uint64_t arena_bytes = 0;           // bytes of the transient arena (memory_plan.cpp)
  uint32_t arena_alignment = 4;
  // The precision policy the plan was lowered under (base/precision.h), and what the device ran instead where it
  // cannot honour it (precision_policy.h's note; empty: as asked).
  Precision precision = Precision::Fp32;
  std::string precision_note;
};

// Lowers `g` (decompose, the before_fusion passes of `passes` when given, schedule, lower every node, plan
// memory) for a device with `info`'s limits. Tunable nodes use `tuning`'s choice for their key where it has one,
// else their template's heuristic. `parameters_once`: mark the launches that compute only from fixed parameters
// (parameter_launches.h), which executors then run once, their results kept in the arena; false: every launch runs
// every step, and the arena holds only what one step needs (less device memory: resnet18 at batch 1 in f32, 18 MB
// against 75 MB). `precision`: the policy (precision_policy.h: bf16 and f16 lower graph_under(g), its f32 values stored in half).
Plan lower(const graph::Graph& g, const rt::DeviceInfo& info, const passes::PassPipeline* passes = nullptr,
           const TuningChoices* tuning = nullptr, bool parameters_once = true, Precision precision = Precision::Fp32);

// The plan as text: buffers (role, type, size, arena offset, values), kernels, launches in order, copies.
std::string plan_text(const Plan& p);

}  // namespace spire::lowering
