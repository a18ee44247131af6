// Stand-ins for the heavy ops' lowerings, compiled only while lowering/heavy_ops.cmake (which adds the real
// lower_matmul.cpp, lower_conv2d.cpp, lower_pool2d.cpp and lower_softmax.cpp) does not exist yet.
#include <fmt/format.h>

#include "lowering/op_lowering.h"

namespace spire::lowering {

namespace {
[[noreturn]] void missing(LoweringContext& ctx, graph::Value v) {
  const graph::Node& n = ctx.graph().node(v);
  throw graph::GraphError(fmt::format("op {} ('{}'): no lowering yet", graph::op_name(n.op), n.name));
}
}  // namespace

void lower_matmul(LoweringContext& ctx, graph::Value v) { missing(ctx, v); }
void lower_conv2d(LoweringContext& ctx, graph::Value v) { missing(ctx, v); }
void lower_conv2d_grad_input(LoweringContext& ctx, graph::Value v) { missing(ctx, v); }
void lower_conv2d_grad_weight(LoweringContext& ctx, graph::Value v) { missing(ctx, v); }
void lower_max_pool2d(LoweringContext& ctx, graph::Value v) { missing(ctx, v); }
void lower_max_pool2d_grad(LoweringContext& ctx, graph::Value v) { missing(ctx, v); }
void lower_avg_pool2d(LoweringContext& ctx, graph::Value v) { missing(ctx, v); }
void lower_avg_pool2d_grad(LoweringContext& ctx, graph::Value v) { missing(ctx, v); }
void lower_softmax(LoweringContext& ctx, graph::Value v) { missing(ctx, v); }
void lower_cross_entropy(LoweringContext& ctx, graph::Value v) { missing(ctx, v); }
void lower_cross_entropy_grad(LoweringContext& ctx, graph::Value v) { missing(ctx, v); }

}  // namespace spire::lowering
