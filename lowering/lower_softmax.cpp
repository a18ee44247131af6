// softmax and log_softmax (ir/graph/ops/softmax_ops.cpp) -> one kernel over rows along the axis
// (kernels/softmax_kernels.h), its workgroup shape tunable: a workgroup per row or an invocation per row.
#include <optional>

#include <fmt/format.h>

#include "kernels/softmax_kernels.h"
#include "lowering/heavy_lowering.h"
#include "lowering/op_lowering.h"
#include "op_harness/cases.h"

namespace spire::lowering {

namespace {

std::optional<TunableOp> tunable_softmax(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const bool log = graph::op_name(node.op) == "log_softmax";
  const heavy::SoftmaxShape s = heavy::softmax_shape(node.type.shape, node.attrs.get_int("axis"));
  const heavy::RowConfig heuristic = heavy::softmax_heuristic(s);
  return one_kernel_op({log ? "log_softmax" : "softmax", fmt::format("o{}_l{}_i{}", s.outer, s.axis, s.inner),
                        heavy::float_suffix(t, "softmax")},
                       heuristic, heavy::row_candidates(heuristic, s.axis, limits), io_buffers(g, v),
                       [s, t, log, sg = limits.subgroup_size](const heavy::RowConfig& c) {
                         return heavy::softmax_kernel(s, t, log, c, sg);
                       });
}

void lower_softmax(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return *tunable_softmax(ctx.graph(), v, ctx.limits()); });
}

}  // namespace

// The kernel normalizes each row as it stores it, so a pointwise epilogue can apply there.
std::vector<OpLowering> softmax_lowerings() {
  return {
      {.op = "softmax", .lower = lower_softmax, .tunable = tunable_softmax, .takes_epilogue = true, .attention_weights = true,
       .cases = harness::softmax_cases},
      {.op = "log_softmax", .lower = lower_softmax, .tunable = tunable_softmax, .takes_epilogue = true,
       .cases = harness::softmax_cases},
  };
}

}  // namespace spire::lowering
