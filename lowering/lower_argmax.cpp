// argmax (ir/graph/ops/argmax_ops.cpp) -> one launch, a workgroup per row along the axis (kernels/argmax_kernel.h); a
// long row on a GPU, two: a workgroup per part of it, then one per row among the parts' choices.

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
  const bool last = n.attrs.get_bool("select_last_index");
  heavy::ArgmaxShape s;
  try {
    s = heavy::argmax_shape(g.type(n.inputs[0]).shape, n.attrs.get_int("axis"));
  } catch (const std::invalid_argument& e) {
    throw graph::GraphError(fmt::format("argmax '{}': {}", n.name, e.what()));
  }
  const uint32_t parts = heavy::argmax_parts(s, limits.cpu);
  if (parts == 1) {
    heavy::launch_heavy(ctx, v, [&] {
      return heavy::argmax_kernel(s, device_type(x_dtype), t, last, heavy::argmax_workgroup(s, limits.max_invocations),
                                  limits.subgroup_size);
    });
    return;
  }
  // A long row on a GPU: each part's choice (a workgroup a part), then the choice among them (kernels/argmax_kernel.h).
  const heavy::ArgmaxShape part{.outer = 1, .axis = heavy::kArgmaxPartLength, .inner = 1};
  heavy::HeavyKernel parts_kernel, choice;
  try {
    parts_kernel = heavy::argmax_kernel(s, device_type(x_dtype), t, last,
                                        heavy::argmax_workgroup(part, limits.max_invocations), limits.subgroup_size, parts);
    choice = heavy::argmax_of_parts_kernel(s, device_type(x_dtype), t, last,
                                           heavy::argmax_workgroup({.outer = 1, .axis = parts, .inner = 1},
                                                                   limits.max_invocations),
                                           limits.subgroup_size, parts);
  } catch (const std::invalid_argument& e) {
    throw graph::GraphError(fmt::format("argmax '{}': {}", n.name, e.what()));
  }
  const int64_t chosen = s.outer * s.inner * parts;
  const int32_t values = ctx.scratch(device_type(x_dtype), chosen), positions = ctx.scratch(kir::Type::I32, chosen);
  ctx.launch(std::move(parts_kernel.kernel), {ctx.buffer_of(n.inputs[0]), values, positions}, {}, parts_kernel.groups);
  ctx.launch(std::move(choice.kernel), {values, positions, ctx.buffer_of(v)}, {}, choice.groups);
}

}  // namespace

std::vector<OpLowering> argmax_lowerings() {
  return {{.op = "argmax", .lower = lower_argmax, .cases = harness::argmax_cases}};
}

}  // namespace spire::lowering
