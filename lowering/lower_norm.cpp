// layer_norm and rms_norm (ir/graph/ops/norm_ops.cpp) -> one kernel, a workgroup per row (kernels/norm_kernels.h),
// its workgroup size tunable.
#include <optional>

#include <fmt/format.h>

#include "kernels/norm_kernels.h"
#include "lowering/heavy_lowering.h"
#include "lowering/op_lowering.h"
#include "op_harness/cases.h"

namespace spire::lowering {

namespace {

std::optional<TunableOp> tunable_norm(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const int64_t length = node.type.shape.back();
  const heavy::NormShape s{.rows = node.type.numel() / std::max<int64_t>(length, 1), .length = length,
                           .center = graph::op_name(node.op) == "layer_norm",
                           .epsilon = node.attrs.get_float("epsilon")};
  const heavy::NormConfig heuristic = heavy::norm_heuristic(s);
  return one_kernel_op({std::string(graph::op_name(node.op)), fmt::format("r{}_l{}_e{}", s.rows, s.length, s.epsilon),
                        heavy::float_suffix(t, "norm")},
                       heuristic, heavy::norm_candidates(s, limits), io_buffers(g, v),
                       [s, t, sg = limits.subgroup_size](const heavy::NormConfig& c) { return heavy::norm_kernel(s, t, c, sg); });
}

void lower_norm(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return *tunable_norm(ctx.graph(), v, ctx.limits()); });
}

}  // namespace

// The kernel normalizes each element as it stores it, so a pointwise epilogue can apply there.
std::vector<OpLowering> norm_lowerings() {
  return {
      {.op = "layer_norm", .lower = lower_norm, .tunable = tunable_norm, .takes_epilogue = true,
       .cases = harness::norm_cases},
      {.op = "rms_norm", .lower = lower_norm, .tunable = tunable_norm, .takes_epilogue = true,
       .cases = harness::norm_cases},
  };
}

}  // namespace spire::lowering
