// argmax (ir/graph/ops/argmax_ops.cpp) -> one launch, a workgroup per row along the axis (kernels/argmax_kernel.h).
#include <fmt/format.h>

#include "kernels/argmax_kernel.h"
#include "lowering/heavy_lowering.h"
#include "lowering/op_lowering.h"
#include "op_harness/cases.h"

namespace spire::lowering {

namespace {

void lower_argmax(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  const graph::DType x_dtype = g.type(n.inputs[0]).dtype;
  // Half elements are compared as the f32 they widen to (exactly).
  const kir::Type t = is_half(x_dtype) ? kir::Type::F32 : heavy::float_type_of(n, x_dtype);
  const heavy::Limits limits = ctx.limits();
  heavy::launch_heavy(ctx, v, [&] {
    const heavy::ArgmaxShape s = heavy::argmax_shape(g.type(n.inputs[0]).shape, n.attrs.get_int("axis"));
    return heavy::argmax_kernel(s, device_type(x_dtype), t, n.attrs.get_bool("select_last_index"),
                                heavy::argmax_workgroup(s, limits.max_invocations), limits.subgroup_size);
  });
}

}  // namespace

std::vector<OpLowering> argmax_lowerings() {
  return {{.op = "argmax", .lower = lower_argmax, .cases = harness::argmax_cases}};
}

}  // namespace spire::lowering
