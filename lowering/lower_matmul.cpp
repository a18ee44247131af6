// matmul -> one tiled kernel (lowering/heavy_kernels/matmul_kernel.h), its tiling tunable; a 2D transpose
// feeding it is read in place (lowering/fuse.h, absorbed_transpose).
#include "lowering/fuse.h"
#include "lowering/heavy_kernels/heavy_lowering.h"
#include "lowering/heavy_kernels/matmul_kernel.h"
#include "lowering/op_lowering.h"
#include "lowering/tunable_ops.h"

namespace spire::lowering {

TunableOp tunable_matmul(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  heavy::MatmulShape s = heavy::matmul_shape(g.type(node.inputs[0]).shape, g.type(node.inputs[1]).shape);
  // Transposes the lowering absorbs are read in place: the operand's buffer is the transpose's input.
  s.a_transposed = absorbed_transpose(g, node.inputs[0]);
  s.b_transposed = absorbed_transpose(g, node.inputs[1]);
  TunableOp op;
  op.key = {"matmul", s.text(), heavy::float_suffix(t, "matmul")};
  op.heuristic = heavy::choose_matmul_tiling(s, t).config();
  op.candidates = configs_of(heavy::matmul_candidates(s, t, limits));
  op.build = [s, t, io = io_buffers(g, v)](const heavy::Config& c) {
    heavy::HeavyKernel k = heavy::matmul_kernel(s, t, heavy::MatmulTiling::from(c));
    return single_kernel_program(io, std::move(k.kernel), k.groups);
  };
  return op;
}

void lower_matmul(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return tunable_matmul(ctx.graph(), v, ctx.limits()); });
}

}  // namespace spire::lowering
