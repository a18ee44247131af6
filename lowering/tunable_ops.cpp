// The tunable template of a node (through lowering's op table), and the tunable nodes of a whole graph.
#include "lowering/precision_policy.h"
#include "lowering/tunable_ops.h"

#include <set>

#include <fmt/format.h>

#include "ir/graph/op_table.h"
#include "lowering/custom_kernels.h"
#include "passes/decompose.h"
#include "lowering/fuse.h"
#include "lowering/op_lowering.h"
#include "passes/canonical.h"
#include "lowering/schedule.h"

namespace spire::lowering {

std::optional<TunableOp> tunable_op(const graph::Graph& g, graph::Value v, const heavy::Limits& limits) {
  const OpLowering* e = op_lowering(g.node(v).op);
  if (!e || !e->tunable) return std::nullopt;
  return e->tunable(g, v, limits);
}

std::vector<TunableOp> tunable_ops(const graph::Graph& original, const rt::DeviceInfo& info, Precision precision) {
  // As lowering sees it (under the policy, canonical): the same keys.
  const graph::Graph g = passes::canonicalize(graph_under(original, info, precision));
  const heavy::Limits limits = limits_under(limits_of(info), info, precision);
  const Fusion fusion = plan_fusion(g);  // pooled forms (gathered prologues, side outputs) are tuned as lowered
  std::vector<TunableOp> out;
  std::set<TuningKey> seen;
  for (graph::Value v : schedule(g)) {
    if (fusion.is_side_output[size_t(v.id)]) continue;  // another node's launch stores it (a bias sum, a pooling)
    if (fusion.fused[size_t(v.id)]) continue;           // computed in another node's launch (an attention's scores)
    if (fusion.attention[size_t(v.id)]) continue;       // an attention's one launch: a single kernel, nothing to tune
    std::optional<TunableOp> op;
    try {
      if (graph::is_user_op(g.node(v).op)) op = tunable_custom(g, v, info);
      else if (g.node(v).op == graph::OpKind::Conv2dGradWeight && fusion.prologue[size_t(v.id)] >= 0)
        op = tunable_conv2d_grad_weight(g, v, limits, true, fusion.side_outputs(v).bias);
      else if (g.node(v).op == graph::OpKind::Matmul && fusion.side_bias[size_t(v.id)] >= 0)
        op = tunable_matmul(g, v, limits, fusion.side_outputs(v).bias);
      else if (g.node(v).op == graph::OpKind::Conv2d && fusion.side_pool[size_t(v.id)] >= 0)
        op = tunable_conv2d(g, v, limits, fusion.side_outputs(v));
      else op = tunable_op(g, v, limits);
    } catch (const std::invalid_argument& e) {
      const graph::Node& n = g.node(v);
      throw graph::GraphError(fmt::format("{} '{}': {}", graph::op_name(n.op), n.name, e.what()));
    }
    if (op && seen.insert(op->key).second) out.push_back(std::move(*op));
  }
  return out;
}

}  // namespace spire::lowering
