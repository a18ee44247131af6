// matmul_int8_weight (ir/graph/ops/int8_matmul_ops.cpp) -> one kernel (kernels/int8_matmul_kernel.h): a workgroup
// per output channel and block of rows, the int8 weights widened in registers.
#include "kernels/int8_matmul_kernel.h"
#include "lowering/heavy_lowering.h"
#include "lowering/op_lowering.h"
#include "op_harness/cases.h"

namespace spire::lowering {

namespace {

void lower_int8_matmul(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const graph::Shape& x = g.type(node.inputs[0]).shape;
  const heavy::Int8MatmulShape s{.rows = graph::num_elements(x) / std::max<int64_t>(x.back(), 1), .k = x.back(),
                                 .n = node.type.shape.back()};
  heavy::launch_heavy(ctx, v, [&] { return heavy::int8_matmul_kernel(s, t, ctx.limits().subgroup_size); });
}

}  // namespace

std::vector<OpLowering> int8_matmul_lowerings() {
  return {{.op = "matmul_int8_weight", .lower = lower_int8_matmul, .cases = harness::int8_matmul_cases}};
}

}  // namespace spire::lowering
