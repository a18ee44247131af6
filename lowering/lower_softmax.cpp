// softmax, log_softmax, cross_entropy and its gradient (lowering/heavy_kernels/softmax_kernels.h), their
// workgroup shapes tunable.
#include "lowering/heavy_kernels/heavy_lowering.h"
#include "lowering/heavy_kernels/softmax_kernels.h"
#include "lowering/op_lowering.h"
#include "lowering/tunable_ops.h"

#include <fmt/format.h>

namespace spire::lowering {

TunableOp tunable_softmax(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const bool log = node.op == graph::OpKind::LogSoftmax;
  const heavy::SoftmaxShape s = heavy::softmax_shape(node.type.shape, node.attrs.get_int("axis"));
  TunableOp op;
  op.key = {log ? "log_softmax" : "softmax", fmt::format("o{}_l{}_i{}", s.outer, s.axis, s.inner),
            heavy::float_suffix(t, "softmax")};
  op.heuristic = heavy::softmax_heuristic(s).config();
  op.candidates = configs_of(heavy::row_candidates(heavy::softmax_heuristic(s), s.axis, limits));
  op.build = [s, t, log, sg = limits.subgroup_size, io = io_buffers(g, v)](const heavy::Config& c) {
    heavy::HeavyKernel k = heavy::softmax_kernel(s, t, log, heavy::RowConfig::from(c), sg);
    return single_kernel_program(io, std::move(k.kernel), k.groups);
  };
  return op;
}

// (logits [N, C], labels [N]) -> scalar. Labels live on the device as i32 whatever their graph dtype.
TunableOp tunable_cross_entropy(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const graph::Shape& logits = g.type(node.inputs[0]).shape;
  const int64_t n = logits.at(0), c = logits.at(1);
  TunableOp op;
  op.key = {"cross_entropy", fmt::format("n{}_c{}", n, c), heavy::float_suffix(t, "cross_entropy")};
  op.heuristic = heavy::Config{{"wg", heavy::cross_entropy_heuristic(n, limits)}};
  for (uint32_t wg : heavy::cross_entropy_candidates(n, limits)) op.candidates.push_back(heavy::Config{{"wg", wg}});
  op.build = [n, c, t, sg = limits.subgroup_size, io = io_buffers(g, v)](const heavy::Config& cfg) {
    const int64_t wg = cfg.get("wg");
    if (wg < 1 || wg > 1024) throw std::invalid_argument(fmt::format("cross_entropy: config '{}': wg 1..1024", cfg.text()));
    heavy::HeavyKernel k = heavy::cross_entropy_kernel(n, c, t, uint32_t(wg), sg);
    return single_kernel_program(io, std::move(k.kernel), k.groups);
  };
  return op;
}

// (grad_out scalar, logits [N, C], labels [N]) -> [N, C].
TunableOp tunable_cross_entropy_grad(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const int64_t n = node.type.shape.at(0), c = node.type.shape.at(1);
  TunableOp op;
  op.key = {"cross_entropy_grad", fmt::format("n{}_c{}", n, c), heavy::float_suffix(t, "cross_entropy_grad")};
  op.heuristic = heavy::cross_entropy_grad_heuristic(n, c).config();
  op.candidates = configs_of(heavy::row_candidates(heavy::cross_entropy_grad_heuristic(n, c), c, limits));
  op.build = [n, c, t, sg = limits.subgroup_size, io = io_buffers(g, v)](const heavy::Config& cfg) {
    heavy::HeavyKernel k = heavy::cross_entropy_grad_kernel(n, c, t, heavy::RowConfig::from(cfg), sg);
    return single_kernel_program(io, std::move(k.kernel), k.groups);
  };
  return op;
}

void lower_softmax(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return tunable_softmax(ctx.graph(), v, ctx.limits()); });
}

void lower_cross_entropy(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return tunable_cross_entropy(ctx.graph(), v, ctx.limits()); });
}

void lower_cross_entropy_grad(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return tunable_cross_entropy_grad(ctx.graph(), v, ctx.limits()); });
}

}  // namespace spire::lowering
