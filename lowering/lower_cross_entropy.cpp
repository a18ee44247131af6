// cross_entropy and its gradient (ir/graph/ops/cross_entropy_ops.cpp) -> their kernels in
// kernels/softmax_kernels.h, workgroup shapes (and for the loss, the split over rows) tunable.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "kernels/softmax_kernels.h"
#include "lowering/heavy_lowering.h"
#include "lowering/op_lowering.h"
#include "op_harness/cases.h"

namespace spire::lowering {

namespace {

// (logits [N, C], labels [N]) -> scalar. Labels live on the device as i32 whatever their graph dtype.
std::optional<TunableOp> tunable_cross_entropy(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const graph::Shape& logits = g.type(node.inputs[0]).shape;
  const int64_t n = logits.at(0), c = logits.at(1);
  TunableOp op;
  op.key = {"cross_entropy", fmt::format("n{}_c{}", n, c), heavy::float_suffix(t, "cross_entropy")};
  // Split configs ("splits": workgroups, each adding its rows; a second launch adds their sums) on GPUs from 2048
  // rows, the heuristic there; one workgroup walking every row elsewhere.
  auto split_config = [n](uint32_t wg, int64_t rows_per_split) {
    return heavy::Config{{"wg", wg}, {"splits", std::min<int64_t>((n + rows_per_split - 1) / rows_per_split, 1024)}};
  };
  op.heuristic = heavy::cross_entropy_splits(n, limits) > 1 ? split_config(256, 256)
                                                            : heavy::Config{{"wg", heavy::cross_entropy_heuristic(n, limits)}};
  op.candidates.push_back(op.heuristic);
  auto add = [&](const heavy::Config& c) {
    if (std::find(op.candidates.begin(), op.candidates.end(), c) == op.candidates.end()) op.candidates.push_back(c);
  };
  if (n >= 2048)
    for (int64_t per : {256, 1024, 128, 4096}) add(split_config(per >= 256 ? 256 : 128, per));
  for (uint32_t wg : heavy::cross_entropy_candidates(n, limits)) add(heavy::Config{{"wg", wg}});
  op.build = [n, c, t, sg = limits.subgroup_size, io = io_buffers(g, v)](const heavy::Config& cfg) {
    const int64_t wg = cfg.get("wg"), splits = cfg.has("splits") ? cfg.get("splits") : 1;
    if (wg < 1 || wg > 1024 || splits < 1 || splits > 1024)
      throw std::invalid_argument(fmt::format("cross_entropy: config '{}': wg 1..1024, splits 1..1024", cfg.text()));
    heavy::HeavyKernel k = heavy::cross_entropy_kernel(n, c, t, uint32_t(wg), sg, uint32_t(splits));
    if (splits == 1) return single_kernel_program(io, std::move(k.kernel), k.groups);
    heavy::HeavyKernel combine = heavy::cross_entropy_combine_kernel(n, t, uint32_t(splits), sg);
    // Buffers: logits, labels, loss, then the partial sums [splits].
    KernelProgram p;
    p.buffers = io;
    p.buffers.push_back({ProgramBuffer::Use::Scratch, -1, t, splits});
    p.launches.push_back({std::move(k.kernel), {0, 1, 3}, k.groups, {}});
    p.launches.push_back({std::move(combine.kernel), {3, 2}, combine.groups, {}});
    return p;
  };
  return op;
}

// (grad_out scalar, logits [N, C], labels [N]) -> [N, C].
std::optional<TunableOp> tunable_cross_entropy_grad(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const graph::Node& node = g.node(v);
  const kir::Type t = heavy::float_type_of(node, node.type.dtype);
  const int64_t n = node.type.shape.at(0), c = node.type.shape.at(1);
  const heavy::RowConfig heuristic = heavy::cross_entropy_grad_heuristic(n, c);
  return one_kernel_op({"cross_entropy_grad", fmt::format("n{}_c{}", n, c), heavy::float_suffix(t, "cross_entropy_grad")},
                       heuristic, heavy::row_candidates(heuristic, c, limits), io_buffers(g, v),
                       [n, c, t, sg = limits.subgroup_size](const heavy::RowConfig& cfg) {
                         return heavy::cross_entropy_grad_kernel(n, c, t, cfg, sg);
                       });
}

void lower_cross_entropy(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return *tunable_cross_entropy(ctx.graph(), v, ctx.limits()); });
}

void lower_cross_entropy_grad(LoweringContext& ctx, graph::Value v) {
  lower_tunable(ctx, v, [&] { return *tunable_cross_entropy_grad(ctx.graph(), v, ctx.limits()); });
}

}  // namespace

// The loss is a scalar (a reduction, no epilogue); its gradient stores one float per logit, where a pointwise
// epilogue can apply.
std::vector<OpLowering> cross_entropy_lowerings() {
  return {
      {.op = "cross_entropy", .lower = lower_cross_entropy, .tunable = tunable_cross_entropy,
       .cases = harness::cross_entropy_cases},
      {.op = "cross_entropy_grad", .lower = lower_cross_entropy_grad, .tunable = tunable_cross_entropy_grad,
       .takes_epilogue = true, .cases = harness::cross_entropy_cases},
  };
}

}  // namespace spire::lowering
