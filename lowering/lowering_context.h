// What lowering an op produces, and the context an op's lowering writes into.
//
// Lowering turns each node of a graph into zero or more kernel launches over device buffers. Shapes are
// static, so every kernel is generated for its node's exact shapes (sizes and strides are constants in the
// kernel, which lets the device compiler fold all index arithmetic); identical kernels are deduplicated by
// the plan. Every launch is followed by a barrier in the recorded stream (fusion comes later).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/kernel/kernel.h"
#include "kernels/tuning_config.h"
#include "lowering/tuning_choices.h"
#include "runtime/device.h"

namespace spire::lowering {

// How each graph dtype is stored on the device. i64 is stored as i32 (labels and indices fit; the executor
// checks the range on upload); bool as u32 (0 or 1).
kir::Type device_type(graph::DType t);

// A buffer of the plan: one per graph value that needs storage, plus scratch.
struct BufferSlot {
  std::string name;       // the value's node name, or "scratch.N"
  kir::Type type;
  int64_t elements = 0;
};

// One kernel launch.
struct Launch {
  int32_t kernel = -1;              // index into Plan::kernels
  std::vector<int32_t> buffers;     // buffer slots, in the kernel's buffer declaration order
  rt::ScalarArgs scalars;
  uint64_t groups = 0;              // logical workgroups (rt::Grid::workgroups)
  std::string node;                 // the graph node this launch computes (for plans and errors)
  // Computes only from fixed parameters and constants (parameter_launches.h): the executor runs it in the first step
  // and after set() of a parameter, not in every step.
  bool parameters_only = false;
};

// What a heavy node's launch stores besides its result (fuse.h's side outputs); invalid values where none.
struct SideOutputs {
  graph::Value pool;    // a convolution's: the max_pool2d of its result (or of its epilogue's root)
  graph::Value argmax;  // that pooling's positions (max_pool2d_argmax); a max_pool2d's: its own
  // A convolution's: nothing but the side outputs reads its result (or epilogue root), which it then does not store.
  bool result_unread = false;
  // A weight gradient's that gathers its grad_out from a pooling's positions: the sum of grad_out per output channel
  // (the layer's bias gradient, a sum_to or sum over images and positions); a linear layer's weight gradient's: the
  // sum of grad_y over the batch.
  graph::Value bias;
  // A few-rows product's: the pointwise tree over its result's two halves (columns n and N / 2 + n) that its launch
  // stores instead of the result (fuse.h's paired epilogues).
  graph::Value pair_root;
};

class LoweringContext {
 public:
  virtual ~LoweringContext() = default;
  virtual const graph::Graph& graph() const = 0;
  // The device the plan is for (its backend and limits): custom ops' kernels are built against it.
  virtual const rt::DeviceInfo& device() const = 0;
  // The buffer slot holding a value (allocated on first use). A reshape/flatten result may alias its input.
  virtual int32_t buffer_of(graph::Value v) = 0;
  // Makes `alias` share `source`'s buffer (same element count): lowering reshape/flatten moves no data.
  virtual void alias(graph::Value alias, graph::Value source) = 0;
  // Makes `v` a window of `source`'s buffer starting `element_offset` elements in (a slice that is one contiguous range
  // of its input: a fused projection's query, key and value), so that it launches nothing. False where the device's
  // binding alignment or the buffers' kinds do not allow it (the caller then copies): only transient values, never a
  // leaf, an output or a state's new value, can be windows or have them.
  virtual bool view(graph::Value v, graph::Value source, int64_t element_offset) { return false; }
  // A temporary buffer private to the current node.
  virtual int32_t scratch(kir::Type type, int64_t elements) = 0;
  // Appends a launch of `kernel` (deduplicated by its text) over `buffers` with `groups` workgroups. A buffer bound
  // to kFusedInputSlot is the current reduction's prologue (fuse.h): its loads compute the input's tree.
  virtual void launch(kir::Kernel kernel, std::vector<int32_t> buffers, rt::ScalarArgs scalars, uint64_t groups) = 0;
  // True when `v` is computed inside its only user's kernel (pointwise fusion, fuse.h): it gets no buffer and
  // no launch of its own; the user's lowering emits its arithmetic. Heavy ops see only one kind of fused input: a
  // 2D transpose a matmul reads in place (fuse.h, absorbed_transpose).
  virtual bool fused(graph::Value v) const { return false; }
  // What convolution or max pooling `v`'s launch also stores (fuse.h's side outputs).
  virtual SideOutputs side_outputs(graph::Value v) const { return {}; }
  // The tuner's choices for the device lowered for (tuning_choices.h); null: every template's heuristic.
  virtual const TuningChoices* tuning() const { return nullptr; }
  // The device's workgroup limits, which bound the candidate configs a tuning choice must be among.
  virtual heavy::Limits limits() const { return {}; }
};

// The slot lower_tunable binds to a fused input of a reduction (its prologue, fuse.h): the launch computes that
// input's pointwise tree in the kernel's loads instead of reading a buffer (LoweringContext::launch).
inline constexpr int32_t kFusedInputSlot = -2;

// Workgroups to cover `n` items with `per_group` items each.
inline uint64_t groups_for(int64_t n, int64_t per_group) { return uint64_t((n + per_group - 1) / per_group); }

}  // namespace spire::lowering
