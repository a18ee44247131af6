// conv2d and its two gradients -> one direct kernel each (lowering/heavy_kernels/conv2d_kernels.h).
#include "lowering/heavy_kernels/conv2d_kernels.h"
#include "lowering/heavy_kernels/heavy_lowering.h"
#include "lowering/op_lowering.h"

#include <stdexcept>

#include <fmt/format.h>

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

// (grad_out, x) with attr weight_shape -> grad_w. Long sums are split over several workgroups: their partial
// sums go to a scratch buffer and a second launch adds them in a fixed order (deterministic, no atomics).
void lower_conv2d_grad_weight(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& node = g.node(v);
  kir::Type t = heavy::float_type_of(node, node.type.dtype);
  heavy::Conv2dShape s;
  uint32_t splits = 1;
  heavy::HeavyKernel partials, sum;
  try {
    s = shape_of(node, g.type(node.inputs[1]).shape, node.type.shape);
    splits = heavy::conv2d_grad_weight_splits(s, t);
    partials = heavy::conv2d_grad_weight_kernel(s, t, splits);
    if (splits > 1) sum = heavy::conv2d_grad_weight_sum_kernel(s, t, splits);
  } catch (const std::invalid_argument& e) {
    throw graph::GraphError(fmt::format("{} '{}': {}", graph::op_name(node.op), node.name, e.what()));
  }
  if (partials.groups == 0) return;
  int32_t grad_y = ctx.buffer_of(node.inputs[0]), x = ctx.buffer_of(node.inputs[1]), grad_w = ctx.buffer_of(v);
  if (splits == 1) {
    ctx.launch(std::move(partials.kernel), {grad_y, x, grad_w}, rt::ScalarArgs{}, partials.groups);
    return;
  }
  int32_t scratch = ctx.scratch(t, int64_t(splits) * s.cout * s.cin_per_group() * s.kh * s.kw);
  ctx.launch(std::move(partials.kernel), {grad_y, x, scratch}, rt::ScalarArgs{}, partials.groups);
  ctx.launch(std::move(sum.kernel), {scratch, grad_w}, rt::ScalarArgs{}, sum.groups);
}

}  // namespace spire::lowering
