// matmul -> one tiled kernel (lowering/heavy_kernels/matmul_kernel.h).
#include "lowering/heavy_kernels/heavy_lowering.h"
#include "lowering/heavy_kernels/matmul_kernel.h"
#include "lowering/op_lowering.h"

namespace spire::lowering {

void lower_matmul(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& node = g.node(v);
  kir::Type t = heavy::float_type_of(node, node.type.dtype);
  heavy::launch_heavy(
      ctx, v,
      [&] { return heavy::matmul_kernel(heavy::matmul_shape(g.type(node.inputs[0]).shape, g.type(node.inputs[1]).shape), t); });
}

}  // namespace spire::lowering
