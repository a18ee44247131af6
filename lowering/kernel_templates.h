// Kernel templates shared between lowering files (internal to lowering/).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/kernel/builder.h"
#include "lowering/index_map.h"
#include "lowering/lowering_context.h"

namespace spire::lowering {

// Invocations per workgroup of the one-element-per-invocation templates.
inline constexpr uint32_t kPointwiseWorkgroup = 256;

// y[i] = x[i] for i < n.
kir::Kernel copy_kernel(kir::Type type, int64_t n);

// y[i] = x[map(i)] for i < n: gathers for permute and broadcast_to.
kir::Kernel gather_kernel(const std::string& name, kir::Type type, int64_t n, const IndexMap& map);

// One operand of a pointwise kernel: a buffer read through an index map, or a scalar constant folded into
// the kernel (a graph Constant never needs a buffer when only pointwise kernels read it).
struct PointwiseOperand {
  graph::Value value;
  kir::Type type;           // device type
  bool folded = false;      // a constant, not a buffer
  double constant = 0;
  IndexMap map;             // output linear index -> input element
};

// The operands of node `v` as a pointwise kernel sees them (constants folded, broadcasting maps built).
std::vector<PointwiseOperand> pointwise_operands(const graph::Graph& g, graph::Value v);

// Emits and launches a one-invocation-per-output-element kernel computing `body(loaded operands)`, which
// returns the value to store (of the output's device type).
void launch_pointwise(LoweringContext& ctx, graph::Value v, const std::string& kernel_name,
                      const std::vector<PointwiseOperand>& operands,
                      const std::function<kir::Val(kir::KernelBuilder&, const std::vector<kir::Val>&)>& body);

// "add_f32_7x33" plus the input shapes where they differ from the output ("_from_1x33_7x33").
std::string pointwise_kernel_name(const graph::Graph& g, graph::Value v, std::string_view op);

}  // namespace spire::lowering
