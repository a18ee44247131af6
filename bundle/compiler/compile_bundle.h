// The compiler half of ahead-of-time compilation: a model -> a Bundle (bundle/bundle.h), with no device present.
//
// For each target profile (target_profiles.h) and each batch the bundle serves, the model's graph at that batch
// is lowered (lowering::lower with the profile's limits), every kernel compiled (backends::compile_kernel:
// SPIR-V validated, PTX assembled by ptxas where it is installed), and the plan turned into plain data: buffers,
// binaries, launches, copies. Weights are stored once, as device bytes, shared by every plan.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"
#include "runtime/device.h"

namespace spire::bundle {

// One named model tensor: the name users see (ONNX's) and the graph's name for it.
struct ModelTensor {
  std::string name;
  std::string graph_name;
};

// The model specialised to one batch (batch 0: the model as it is, fixed shapes).
struct ModelAtBatch {
  graph::Graph graph;
  std::map<std::string, graph::Tensor> weights;  // by parameter name
  std::vector<ModelTensor> inputs, outputs;
};

struct CompileBundleOptions {
  std::vector<rt::DeviceInfo> targets;  // target_profiles("spirv,ptx")
  int64_t max_batch = 0;    // with dynamic_batch: the largest batch
  bool dynamic_batch = false;
  bool exact_batches = false;  // a plan for every batch 1..max_batch instead of 1, 2, 4, ..., max_batch
  std::string model_name;      // for messages and the bundle's `model` field
  // Launches that read only weights run in a plan's first run only, their results kept in its arena (lowering's
  // parameters_once); false: every launch runs every time, and the arena holds only what one run needs.
  bool parameters_once = true;
  // The precision policy every plan is lowered under (base/precision.h), recorded in the bundle. A target without
  // TF32 matrices runs tf32 as fp32 (lowering/precision_policy.h's note says so).
  Precision precision = Precision::Fp32;
  // Called before each plan is compiled (for a progress bar): index from 0, count, target, batch.
  std::function<void(size_t, size_t, const std::string&, int64_t)> progress;
};

// The batches a dynamic bundle holds plans for.
std::vector<int64_t> plan_batches(int64_t max_batch, bool exact);

// `model(b)` gives the model at batch b (called once per batch, b = 0 when not dynamic). Throws what lowering and
// the compilers throw, and std::invalid_argument when the model's shapes do not vary with the batch as a batch
// dimension (only the first dimension of an input or output may, and then equal to the batch).
Bundle compile_bundle(const std::function<ModelAtBatch(int64_t)>& model, const CompileBundleOptions& options);

}  // namespace spire::bundle
