// Layout ops and constants. Row-major storage makes reshape and flatten free (the result aliases its
// input); permute and broadcast_to gather through an index map, and alias too when the map is the identity.
#include <fmt/format.h>

#include "lowering/kernel_templates.h"
#include "lowering/op_lowering.h"

#include "op_harness/cases.h"

namespace spire::lowering {

namespace {

void lower_constant(LoweringContext&, graph::Value) {
  // Nothing to launch: a constant's buffer is created (and filled once, at compile time) by the first
  // lowering that asks for it, and pointwise kernels fold scalar constants in without any buffer.
}

void lower_reshape(LoweringContext& ctx, graph::Value v) { ctx.alias(v, ctx.graph().node(v).inputs[0]); }

void gather(LoweringContext& ctx, graph::Value v, const std::string& op, const IndexMap& map) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  if (map.is_identity()) {
    ctx.alias(v, n.inputs[0]);
    return;
  }
  int64_t count = n.type.numel();
  std::string name = fmt::format("{}_{}_{}_from_{}", op, graph::dtype_name(n.type.dtype), shape_tag(n.type.shape),
                                 shape_tag(g.type(n.inputs[0]).shape));
  ctx.launch(gather_kernel(name, device_type(n.type.dtype), count, map), {ctx.buffer_of(n.inputs[0]), ctx.buffer_of(v)},
             {}, groups_for(count, kPointwiseWorkgroup));
}

void lower_permute(LoweringContext& ctx, graph::Value v) {
  const graph::Node& n = ctx.graph().node(v);
  gather(ctx, v, "permute", IndexMap::permuted(ctx.graph().type(n.inputs[0]).shape, n.attrs.get_ints("perm")));
}

void lower_broadcast_to(LoweringContext& ctx, graph::Value v) {
  const graph::Node& n = ctx.graph().node(v);
  const graph::Shape& in = ctx.graph().type(n.inputs[0]).shape;
  // Same element count: only dims of size 1 were added, the bytes are the same.
  if (graph::num_elements(in) == n.type.numel()) {
    ctx.alias(v, n.inputs[0]);
    return;
  }
  gather(ctx, v, "broadcast", IndexMap::broadcast(n.type.shape, in));
}

}  // namespace

std::vector<OpLowering> layout_lowerings() {
  return {
      {.op = "constant", .lower = lower_constant},  // a leaf: its cases are pointwise_cases' (cases_pointwise.cpp)
      {.op = "reshape", .lower = lower_reshape, .cases = harness::layout_cases},
      {.op = "flatten", .lower = lower_reshape, .cases = harness::layout_cases},
      {.op = "permute", .lower = lower_permute, .cases = harness::layout_cases},
      {.op = "broadcast_to", .lower = lower_broadcast_to, .cases = harness::layout_cases},
  };
}

}  // namespace spire::lowering
