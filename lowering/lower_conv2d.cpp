// conv2d and its two gradients -> one direct kernel each (lowering/heavy_kernels/conv2d_kernels.h).
#include "lowering/heavy_kernels/conv2d_kernels.h"
#include "lowering/heavy_kernels/heavy_lowering.h"
#include "lowering/op_lowering.h"

namespace spire::lowering {

namespace {

heavy::Conv2dShape shape_of(const graph::Node& node, const graph::Shape& x, const graph::Shape& w) {
  graph::Conv2dOptions o = graph::conv2d_options(node);
  return heavy::conv2d_shape(x, w, o.stride, o.padding, o.dilation, o.groups);
}

}  // namespace

void lower_conv2d(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& node = g.node(v);
  kir::Type t = heavy::float_type_of(node, node.type.dtype);
  heavy::launch_heavy(
      ctx, v,
      [&] { return heavy::conv2d_kernel(shape_of(node, g.type(node.inputs[0]).shape, g.type(node.inputs[1]).shape), t); });
}

// (grad_out, w) with attr input_shape -> grad_x.
void lower_conv2d_grad_input(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& node = g.node(v);
  kir::Type t = heavy::float_type_of(node, node.type.dtype);
  heavy::launch_heavy(
      ctx, v, [&] { return heavy::conv2d_grad_input_kernel(shape_of(node, node.type.shape, g.type(node.inputs[1]).shape), t); });
}

// (grad_out, x) with attr weight_shape -> grad_w.
void lower_conv2d_grad_weight(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& node = g.node(v);
  kir::Type t = heavy::float_type_of(node, node.type.dtype);
  heavy::launch_heavy(
      ctx, v, [&] { return heavy::conv2d_grad_weight_kernel(shape_of(node, g.type(node.inputs[1]).shape, node.type.shape), t); });
}

}  // namespace spire::lowering
