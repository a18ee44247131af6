// softmax, log_softmax, cross_entropy and its gradient (lowering/heavy_kernels/softmax_kernels.h).
#include "lowering/heavy_kernels/heavy_lowering.h"
#include "lowering/heavy_kernels/softmax_kernels.h"
#include "lowering/op_lowering.h"

namespace spire::lowering {

void lower_softmax(LoweringContext& ctx, graph::Value v) {
  const graph::Node& node = ctx.graph().node(v);
  kir::Type t = heavy::float_type_of(node, node.type.dtype);
  bool log = node.op == graph::OpKind::LogSoftmax;
  heavy::launch_heavy(
      ctx, v, [&] { return heavy::softmax_kernel(heavy::softmax_shape(node.type.shape, node.attrs.get_int("axis")), t, log); });
}

// (logits [N, C], labels [N]) -> scalar. Labels live on the device as i32 whatever their graph dtype.
void lower_cross_entropy(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& node = g.node(v);
  kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const graph::Shape& logits = g.type(node.inputs[0]).shape;
  heavy::launch_heavy(ctx, v, [&] { return heavy::cross_entropy_kernel(logits.at(0), logits.at(1), t); });
}

// (grad_out scalar, logits [N, C], labels [N]) -> [N, C].
void lower_cross_entropy_grad(LoweringContext& ctx, graph::Value v) {
  const graph::Node& node = ctx.graph().node(v);
  kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const graph::Shape& logits = node.type.shape;
  heavy::launch_heavy(ctx, v, [&] { return heavy::cross_entropy_grad_kernel(logits.at(0), logits.at(1), t); });
}

}  // namespace spire::lowering
