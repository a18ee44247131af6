// conv2d and its two gradients -> one direct kernel each (lowering/heavy_kernels/conv2d_kernels.h), how
// they spread their work tunable; conv2d may instead be an implicit GEMM (conv2d_gemm_kernel.h), one more
// family of points in the same config space.
#include "lowering/heavy_kernels/conv2d_gemm_kernel.h"
#include "lowering/heavy_kernels/conv2d_kernels.h"
#include "lowering/heavy_kernels/heavy_lowering.h"
#include "lowering/op_lowering.h"
#include "lowering/tunable_ops.h"

#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering {

namespace {

heavy::Conv2dShape shape_of(const graph::Node& node, const graph::Shape& x, const graph::Shape& w) {
  graph::Conv2dOptions o = graph::conv2d_options(node);
  return heavy::conv2d_shape(x, w, o.stride, o.padding, o.dilation, o.groups);
}

// A config of the GEMM family carries a tiling (tile_m, ...); the direct family's carry rows, wg, c_block.
bool is_gemm_config(const heavy::Config& c) { return c.has("tile_m"); }

// The GEMM form where the tiled GEMM would use its large blocks (64x64 or more: many output channels and
// positions); elsewhere the direct kernels, which have no staging overhead and spread small problems wider.
heavy::Config conv2d_heuristic_config(const heavy::Conv2dShape& s, kir::Type t) {
  if (s.groups == 1) {
    const heavy::MatmulTiling g = heavy::choose_matmul_tiling(heavy::conv2d_gemm_shape(s), t);
    if (g.tile_m >= 64) return g.config();
  }
  return heavy::conv2d_heuristic(s).config();
}

}  // namespace

TunableOp tunable_conv2d(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const heavy::Conv2dShape s = shape_of(node, g.type(node.inputs[0]).shape, g.type(node.inputs[1]).shape);
  TunableOp op;
  op.key = {"conv2d", s.text(), heavy::float_suffix(t, "conv2d")};
  op.heuristic = conv2d_heuristic_config(s, t);
  op.candidates = configs_of(heavy::conv2d_candidates(s, limits));
  if (s.groups == 1)
    for (const heavy::Config& c : configs_of(heavy::matmul_candidates(heavy::conv2d_gemm_shape(s), t, limits)))
      op.candidates.push_back(c);
  // The heuristic is the first candidate, as for every tunable op.
  std::erase(op.candidates, op.heuristic);
  op.candidates.insert(op.candidates.begin(), op.heuristic);
  op.build = [s, t, io = io_buffers(g, v)](const heavy::Config& c) {
    heavy::HeavyKernel k = is_gemm_config(c) ? heavy::conv2d_gemm_kernel(s, t, heavy::MatmulTiling::from(c))
                                             : heavy::conv2d_kernel(s, t, heavy::Conv2dConfig::from(c));
    return single_kernel_program(io, std::move(k.kernel), k.groups);
  };
  return op;
}

// (grad_out, w) with attr input_shape -> grad_x.
TunableOp tunable_conv2d_grad_input(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const heavy::Conv2dShape s = shape_of(node, node.type.shape, g.type(node.inputs[1]).shape);
  TunableOp op;
  op.key = {"conv2d_grad_input", s.text(), heavy::float_suffix(t, "conv2d_grad_input")};
  op.heuristic = heavy::conv2d_grad_input_heuristic(s).config();
  op.candidates = configs_of(heavy::conv2d_grad_input_candidates(s, limits));
  op.build = [s, t, io = io_buffers(g, v)](const heavy::Config& c) {
    heavy::HeavyKernel k = heavy::conv2d_grad_input_kernel(s, t, heavy::Conv2dConfig::from(c));
    return single_kernel_program(io, std::move(k.kernel), k.groups);
  };
  return op;
}

// (grad_out, x) with attr weight_shape -> grad_w. Long sums are split over several workgroups: their partial
// sums go to a scratch buffer and a second launch adds them in a fixed order (deterministic, no atomics).
TunableOp tunable_conv2d_grad_weight(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const heavy::Conv2dShape s = shape_of(node, g.type(node.inputs[1]).shape, node.type.shape);
  TunableOp op;
  op.key = {"conv2d_grad_weight", s.text(), heavy::float_suffix(t, "conv2d_grad_weight")};
  op.heuristic = heavy::conv2d_grad_weight_heuristic(s, t).config();
  op.candidates = configs_of(heavy::conv2d_grad_weight_candidates(s, t, limits));
  op.build = [s, t, limits, io = io_buffers(g, v)](const heavy::Config& c) {
    const heavy::GradWeightConfig cfg = heavy::GradWeightConfig::from(c);
    heavy::HeavyKernel partials = heavy::conv2d_grad_weight_kernel(s, t, cfg, limits);
    if (cfg.splits == 1) return single_kernel_program(io, std::move(partials.kernel), partials.groups);
    heavy::HeavyKernel sum = heavy::conv2d_grad_weight_sum_kernel(s, t, cfg.splits);
    // Buffers: grad_y, x, grad_w, then the partial sums [splits][weights].
    KernelProgram p;
    p.buffers = io;
    p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, int64_t(cfg.splits) * s.cout * s.cin_per_group() * s.kh * s.kw});
    p.launches.push_back({std::move(partials.kernel), {0, 1, 3}, partials.groups, {}});
    p.launches.push_back({std::move(sum.kernel), {3, 2}, sum.groups, {}});
    return p;
  };
  return op;
}

void lower_conv2d(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return tunable_conv2d(ctx.graph(), v, ctx.limits()); });
}

void lower_conv2d_grad_input(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return tunable_conv2d_grad_input(ctx.graph(), v, ctx.limits()); });
}

void lower_conv2d_grad_weight(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return tunable_conv2d_grad_weight(ctx.graph(), v, ctx.limits()); });
}

}  // namespace spire::lowering
