#include "lowering/heavy_lowering.h"

#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

kir::Type float_type_of(const graph::Node& node, graph::DType dtype) {
  if (dtype == graph::DType::F32) return kir::Type::F32;
  if (dtype == graph::DType::F64) return kir::Type::F64;
  throw graph::GraphError(fmt::format("{} '{}': no kernel for dtype {} (f32 or f64 only)", graph::op_name(node.op),
                                      node.name, graph::dtype_name(dtype)));
}

namespace {

std::vector<int32_t> io_buffers(LoweringContext& ctx, graph::Value v) {
  std::vector<int32_t> out;
  // An input fused into the kernel's loads (fuse.h's prologues) has no buffer: the launch computes it.
  for (graph::Value in : ctx.graph().node(v).inputs) out.push_back(ctx.fused(in) ? kFusedInputSlot : ctx.buffer_of(in));
  out.push_back(ctx.buffer_of(v));
  return out;
}

}  // namespace

void launch_heavy(LoweringContext& ctx, graph::Value v, const std::function<HeavyKernel()>& make,
                  const std::vector<graph::Value>& also, const std::vector<int32_t>& extra) {
  const graph::Node& node = ctx.graph().node(v);
  HeavyKernel k;
  try {
    k = make();
  } catch (const std::invalid_argument& e) {
    throw graph::GraphError(fmt::format("{} '{}': {}", graph::op_name(node.op), node.name, e.what()));
  }
  if (k.groups == 0) return;
  std::vector<int32_t> buffers = io_buffers(ctx, v);
  for (graph::Value a : also) buffers.push_back(ctx.buffer_of(a));
  buffers.insert(buffers.end(), extra.begin(), extra.end());
  ctx.launch(std::move(k.kernel), std::move(buffers), rt::ScalarArgs{}, k.groups);
}

}  // namespace spire::lowering::heavy
