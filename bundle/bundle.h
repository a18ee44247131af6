// A bundle: a model compiled ahead of time, everything a runtime needs to run it and nothing of the compiler.
//
// It holds the model's named inputs and outputs, its weights (stored once), and one or more device plans: for
// each target format (SPIR-V for any Vulkan device, PTX for NVIDIA through CUDA) and each batch size the bundle
// was specialised for, the buffers, the compiled kernels, the launches in order and the copies that end a step.
// Everything here is plain data: the runtime (session.h) executes it on an rt::Device and never sees a graph.
//
// Dynamic batch: a bundle compiled with --dynamic-batch holds plans for batches 1, 2, 4, ... up to the maximum
// (always included). A run at batch b uses the smallest plan >= b: the inputs' rows b.. are zero, and only the
// outputs' first b rows are read back. That is exact when each output row depends on its own input row only
// (inference models; docs/BUNDLE.md), and `spire compile --exact-batches` compiles every batch instead.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/kernel_binary.h"

namespace spire::bundle {

// Every problem with a bundle's bytes (not a bundle, truncated, another format version, a bad checksum, an
// index out of range): the message names the source and the problem.
class BundleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Element types of the tensors an application passes in and out, in host memory (Bool: one byte, 0 or 1).
enum class DType : uint8_t { F32, F64, I32, I64, Bool };
std::string_view dtype_name(DType t);  // "f32", ...
uint32_t dtype_bytes(DType t);

// A named model input or output. shape[0] is the batch when `batched` (set to the plan's batch when run).
struct TensorSpec {
  std::string name;  // the ONNX name (or the graph's, for a graph text model)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // at the bundle's largest batch
  bool batched = false;
  uint64_t elements_at(int64_t batch) const;  // element count when the batch is `batch`
};

enum class BufferRole : uint8_t { Transient, Input, Parameter, State, Constant, Output };

struct BufferSpec {
  std::string name;
  kir::Type type = kir::Type::F32;  // the device element type (an i64 value is stored as i32 on devices)
  uint64_t elements = 0;
  BufferRole role = BufferRole::Transient;
  int64_t arena_offset = -1;   // Transient buffers a launch touches: byte offset in the plan's arena
  std::optional<double> fill;  // Constant and State: every element's initial value
  int32_t weight = -1;         // Parameter: index into Bundle::weights holding its initial bytes
  uint64_t bytes() const { return elements * kir::type_bytes(type); }
};

struct LaunchSpec {
  uint32_t kernel = 0;               // index into DevicePlan::kernels
  std::vector<uint32_t> buffers;     // in the kernel's buffer declaration order
  std::vector<uint8_t> scalars;      // packed per the kernel signature's scalar_offsets()
  uint64_t groups = 0;               // logical workgroups (rt::Grid::workgroups)
  std::string node;                  // the graph node it computes, for messages and profiles
  // Computes only from weights no state copy updates and from constants (lowering's Launch::parameters_only): a plan
  // runs it in its first run only, its results keeping their place in the arena (writes only transient buffers).
  bool parameters_only = false;
};

struct CopySpec {  // a state update at the end of a step
  uint32_t from = 0, to = 0;
};

struct DevicePlan {
  rt::BinaryFormat format = rt::BinaryFormat::Spirv;
  uint32_t ptx_sm = 0;          // Ptx: the compute capability the kernels need at least
  std::string target;           // the target profile's name ("spirv", "ptx-sm75"): for messages
  int64_t batch = 0;            // the batch this plan was specialised for
  uint64_t arena_bytes = 0;
  std::vector<BufferSpec> buffers;
  std::vector<rt::KernelBinary> kernels;
  std::vector<LaunchSpec> launches;
  std::vector<CopySpec> copies;
  std::vector<uint32_t> input_buffers;   // the buffer of Bundle::inputs[i]
  std::vector<uint32_t> output_buffers;  // the buffer of Bundle::outputs[i]
};

struct Weight {
  std::string name;
  kir::Type type = kir::Type::F32;  // device element type of its bytes
  std::vector<uint8_t> bytes;
};

struct Bundle {
  std::string model;     // where it was compiled from (file name), for messages
  std::string producer;  // "spire <version>"
  std::vector<TensorSpec> inputs, outputs;
  int64_t max_batch = 0;  // 0: the model has no batch dimension (one fixed plan per target)
  bool dynamic_batch = false;
  std::vector<Weight> weights;
  std::vector<DevicePlan> plans;
};

// The bundle's structural invariants (every index in range, sizes consistent with the kernels' signatures, arena
// offsets inside the arena, weights the size of their buffers): throws BundleError naming `source` and the first
// problem. parse_bundle() runs it, so a runtime never executes a bundle that fails it.
void validate(const Bundle& b, const std::string& source);

}  // namespace spire::bundle
