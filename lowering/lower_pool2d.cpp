// max_pool2d, avg_pool2d and their gradients -> one kernel each (kernels/pool2d_kernels.h).
#include "lowering/heavy_lowering.h"
#include "kernels/pool2d_kernels.h"
#include "kernels/split_sum_kernel.h"

#include <fmt/format.h>
#include "lowering/op_lowering.h"
#include "op_harness/cases.h"

namespace spire::lowering {

namespace {

heavy::Pool2dShape shape_of(const graph::Node& node, const graph::Shape& x) {
  graph::Pool2dOptions o = graph::pool2d_options(node);
  return heavy::pool2d_shape(x, o.kernel, o.stride, o.padding);
}

using Template = heavy::HeavyKernel (*)(const heavy::Pool2dShape&, kir::Type);

// `x_shape` is the pooled input's shape (an input's type, or the result's for the gradients).
void lower_pool(LoweringContext& ctx, graph::Value v, Template make, const graph::Shape& x_shape) {
  const graph::Node& node = ctx.graph().node(v);
  kir::Type t = heavy::float_type_of(node, node.type.dtype);
  heavy::launch_heavy(ctx, v, [&] { return make(shape_of(node, x_shape), t); });
}


// (x) -> y, and the positions of its maxima where they are its side output (fuse.h): one launch stores both.
void lower_max_pool2d(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Value argmax = ctx.side_outputs(v).argmax;
  if (!argmax.valid()) {
    lower_pool(ctx, v, [](const heavy::Pool2dShape& s, kir::Type t) { return heavy::max_pool2d_kernel(s, t); },
               g.type(g.node(v).inputs[0]).shape);
    return;
  }
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  heavy::launch_heavy(
      ctx, v, [&] { return heavy::max_pool2d_kernel(shape_of(node, g.type(node.inputs[0]).shape), t, true); }, {argmax});
}

// (x) -> i32 positions; the kernel's type is the input's.
void lower_max_pool2d_argmax(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& node = g.node(v);
  const graph::TensorType& x = g.type(node.inputs[0]);
  const kir::Type t = heavy::float_type_of(node, x.dtype);
  heavy::launch_heavy(ctx, v, [&] { return heavy::max_pool2d_argmax_kernel(shape_of(node, x.shape), t); });
}

// (grad_out, argmax) with attr input_shape -> grad_x. grad_out may be a pointwise tree computed in the loads (fuse.h's
// prologues: the ReLU's mask of passes/pool_grad_by_argmax.h).
// Where the bias sum of the convolution under the pooling is its side output (fuse.h), the launch also adds the
// gradient it reads per channel and chunk of images, and a second launch adds the chunks' partial sums.
void lower_max_pool2d_grad_argmax(LoweringContext& ctx, graph::Value v) {
  const graph::Value bias = ctx.side_outputs(v).bias;
  if (!bias.valid()) {
    lower_pool(ctx, v, [](const heavy::Pool2dShape& s, kir::Type t) { return heavy::max_pool2d_grad_argmax_kernel(s, t); },
               ctx.graph().node(v).type.shape);
    return;
  }
  const graph::Node& node = ctx.graph().node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const heavy::Pool2dShape s = shape_of(node, node.type.shape);
  const uint32_t chunks = heavy::max_pool2d_grad_sum_chunks(s);
  const int32_t partial = ctx.scratch(t, int64_t(chunks) * s.c);
  // Through ptxas every round's loads first (pool2d_kernels.h; measured on the H100).
  const bool loads_first = ctx.limits().ptx;
  heavy::launch_heavy(ctx, v, [&] { return heavy::max_pool2d_grad_argmax_kernel(s, t, false, chunks, loads_first); },
                      {}, {partial});
  heavy::HeavyKernel sum =
      heavy::split_sum_kernel(fmt::format("max_pool2d_grad_argmax_sums_{}_s{}_{}", s.text(), chunks, dtype_name(t)), t,
                              uint32_t(s.c), chunks);
  ctx.launch(std::move(sum.kernel), {partial, ctx.buffer_of(bias)}, rt::ScalarArgs{}, sum.groups);
}

// (grad_out, x) -> grad_x.
void lower_max_pool2d_grad(LoweringContext& ctx, graph::Value v) {
  lower_pool(ctx, v, [](const heavy::Pool2dShape& s, kir::Type t) { return heavy::max_pool2d_grad_kernel(s, t); },
             ctx.graph().node(v).type.shape);
}

void lower_avg_pool2d(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  lower_pool(ctx, v, heavy::avg_pool2d_kernel, g.type(g.node(v).inputs[0]).shape);
}

// (grad_out) with attr input_shape -> grad_x.
void lower_avg_pool2d_grad(LoweringContext& ctx, graph::Value v) {
  lower_pool(ctx, v, heavy::avg_pool2d_grad_kernel, ctx.graph().node(v).type.shape);
}

}  // namespace

// No config space: each pooling is one kernel of one shape. Every kernel but the positions' stores a float per
// element, where a pointwise epilogue can apply.
std::vector<OpLowering> pool2d_lowerings() {
  return {
      {.op = "max_pool2d", .lower = lower_max_pool2d, .takes_epilogue = true, .cases = harness::pool2d_cases},
      {.op = "max_pool2d_argmax", .lower = lower_max_pool2d_argmax, .cases = harness::pool2d_cases},
      {.op = "avg_pool2d", .lower = lower_avg_pool2d, .takes_epilogue = true, .cases = harness::pool2d_cases},
      {.op = "max_pool2d_grad", .lower = lower_max_pool2d_grad, .takes_epilogue = true, .cases = harness::pool2d_cases},
      {.op = "avg_pool2d_grad", .lower = lower_avg_pool2d_grad, .takes_epilogue = true, .cases = harness::pool2d_cases},
      {.op = "max_pool2d_grad_argmax", .lower = lower_max_pool2d_grad_argmax, .takes_epilogue = true,
       .cases = harness::pool2d_cases},
  };
}

}  // namespace spire::lowering
