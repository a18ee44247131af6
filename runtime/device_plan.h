// The device plan: one model step as plain data, what the runtime executes (plan_executor.h) and nothing of the
// compiler. Lowering produces it in memory for the JIT path (lowering/device_plan.h); a bundle stores one per target
// and batch (bundle/bundle.h). So both paths run through the same executor.
//
// It holds the buffers (their roles, sizes, arena offsets and initial fills), the compiled kernels, the launches in
// order, and the state-update copies that end each step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/kernel_binary.h"

namespace spire::rt {

// Why a buffer exists; everything but Transient lives across steps and gets its own device buffer.
enum class BufferRole : uint8_t {
  Transient,  // an intermediate or scratch: placed in the arena, its bytes reused once it is dead
  Input,      // fed before a step
  Parameter,  // persistent, set once, updated by state updates
  State,      // persistent, initialised to its fill value, updated by state updates
  Constant,   // filled once
  Output,     // a graph output or a state update's new value: must survive the step
};
std::string_view buffer_role_name(BufferRole r);  // "transient", "input", ...

struct BufferSpec {
  std::string name;
  DType type = DType::F32;  // the device element type (an i64 value is stored as i32 on devices)
  uint64_t elements = 0;
  BufferRole role = BufferRole::Transient;
  int64_t arena_offset = -1;   // Transient buffers a launch touches: byte offset in the plan's arena
  std::optional<double> fill;  // Constant and State: every element's initial value
  int32_t weight = -1;         // a bundle's Parameter: index into its weights holding the initial bytes
  uint64_t bytes() const { return elements * dtype_bytes(type); }
  bool persistent() const { return role != BufferRole::Transient; }
};

struct LaunchSpec {
  uint32_t kernel = 0;               // index into DevicePlan::kernels
  std::vector<uint32_t> buffers;     // in the kernel's buffer declaration order
  std::vector<uint8_t> scalars;      // packed per the kernel signature's scalar_offsets(), scalar_block_bytes() long
  uint64_t groups = 0;               // logical workgroups (rt::Grid::workgroups)
  std::string node;                  // the graph node it computes, for messages and profiles
  // Computes only from weights no state copy updates and from constants: the executor runs it in a plan's first step
  // and after a parameter changes, its results keeping their place in the arena (it writes only transient buffers).
  bool parameters_only = false;
};

struct CopySpec {  // a state update at the end of a step
  uint32_t from = 0, to = 0;
};

struct DevicePlan {
  BinaryFormat format = BinaryFormat::Spirv;
  uint32_t ptx_sm = 0;          // Ptx: the compute capability the kernels need at least
  std::string target;           // the target's name ("spirv", "ptx-sm75", a device id): for messages
  int64_t batch = 0;            // the batch this plan was specialised for (0: the model's own shapes)
  uint64_t arena_bytes = 0;
  std::vector<BufferSpec> buffers;
  std::vector<KernelBinary> kernels;
  std::vector<LaunchSpec> launches;
  std::vector<CopySpec> copies;
  std::vector<uint32_t> input_buffers;   // a bundle's: the buffer of its inputs[i]
  std::vector<uint32_t> output_buffers;  // a bundle's: the buffer of its outputs[i]
};

}  // namespace spire::rt
