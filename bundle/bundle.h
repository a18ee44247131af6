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
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/precision.h"
#include "runtime/device_plan.h"

namespace spire::bundle {

// Every problem with a bundle's bytes (not a bundle, truncated, another format version, a bad checksum, an
// index out of range): the message names the source and the problem.
class BundleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The bundle file does not exist or cannot be opened (the C API says NOT_FOUND rather than BAD_BUNDLE).
class BundleNotFound : public BundleError {
 public:
  using BundleError::BundleError;
};

// Element types of the tensors an application passes in and out, in host memory: the tree's one (base/dtype.h; Bool
// one byte, 0 or 1). A bundle's tensors are f32, f64, f16, bf16, i32, i64 or bool.
using spire::DType;
using spire::dtype_bytes;
using spire::dtype_name;

// A named model input or output. shape[0] is the batch when `batched` (set to the plan's batch when run).
struct TensorSpec {
  std::string name;  // the ONNX name (or the graph's, for a graph text model)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // at the bundle's largest batch
  bool batched = false;
  uint64_t elements_at(int64_t batch) const;  // element count when the batch is `batch`
};

// The device plans a bundle holds are the runtime's (runtime/device_plan.h), which the JIT path builds in memory too.
using rt::BufferRole;
using rt::BufferSpec;
using rt::CopySpec;
using rt::DevicePlan;
using rt::LaunchSpec;

struct Weight {
  std::string name;
  DType type = DType::F32;  // device element type of its bytes
  std::vector<uint8_t> bytes;       // the value, held here (compiled in memory, or parsed from bytes the caller keeps)
  std::span<const uint8_t> mapped;  // or where it lies in the mapped bundle file (Bundle::file keeps it alive)
  std::span<const uint8_t> data() const { return mapped.data() ? mapped : std::span<const uint8_t>(bytes); }
};

struct Bundle {
  std::string model;     // where it was compiled from (file name), for messages
  std::string producer;  // "spire <version>"
  std::vector<TensorSpec> inputs, outputs;
  int64_t max_batch = 0;  // 0: the model has no batch dimension (one fixed plan per target)
  bool dynamic_batch = false;
  Precision precision = Precision::Fp32;  // the policy its plans were compiled under (base/precision.h)
  std::vector<Weight> weights;
  std::vector<DevicePlan> plans;
  std::shared_ptr<const void> file;  // the mapped file the weights lie in, when read by read_bundle()
  // The graph the plans were compiled from, in graph text at the largest batch, and the graph's names for the named
  // inputs and outputs (in their order): what a tool that compares a bundle's values needs (spire diff). Since
  // format version 7; empty in older bundles. The runtime never reads them.
  std::string source_graph;
  std::vector<std::string> input_graph_names, output_graph_names;
};

// The bundle's structural invariants (every index in range, sizes consistent with the kernels' signatures, arena
// offsets inside the arena, weights the size of their buffers): throws BundleError naming `source` and the first
// problem. parse_bundle() runs it, so a runtime never executes a bundle that fails it.
void validate(const Bundle& b, const std::string& source);

}  // namespace spire::bundle
