#include "lowering/stats.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "passes/canonical.h"
#include "lowering/plan.h"
#include "lowering/schedule.h"

namespace spire::lowering {

GraphStats graph_stats(const graph::Graph& original, const passes::PassPipeline* passes) {
  // The same graph lower() plans: decomposed (mean is a sum and a multiply there), rewritten by the
  // before_fusion passes, and scheduled (dead nodes dropped), so the counts describe what runs.
  const graph::Graph g = passes::prepare_for_fusion(original, passes);
  std::map<std::string, OpKindStats> by_name;
  GraphStats s;
  for (graph::Value v : schedule(g)) {
    const graph::Node& n = g.node(v);
    const graph::OpCost c = graph::op_cost(g, v);
    OpKindStats& k = by_name[std::string(graph::op_name(n.op))];
    k.op = graph::op_name(n.op);
    k.nodes += 1;
    k.cost.flops += c.flops;
    k.cost.bytes += c.bytes;
    s.total.flops += c.flops;
    s.total.bytes += c.bytes;
  }
  for (auto& [name, k] : by_name) s.by_op.push_back(std::move(k));
  std::stable_sort(s.by_op.begin(), s.by_op.end(),
                   [](const OpKindStats& a, const OpKindStats& b) { return a.cost.flops > b.cost.flops; });
  return s;
}

uint64_t plan_bytes(const Plan& p) {
  uint64_t b = 0;
  for (const Launch& l : p.launches)
    for (int32_t buf : l.buffers) b += p.buffers[size_t(buf)].bytes();
  for (const StateCopy& c : p.copies) b += 2 * p.buffers[size_t(c.to)].bytes();
  return b;
}

namespace {

std::string intensity(const graph::OpCost& c) {
  return c.bytes > 0 ? fmt::format("{:.3f}", double(c.flops) / double(c.bytes)) : "-";
}

}  // namespace

std::string stats_text(const GraphStats& s) {
  std::string t = fmt::format("{:<22} {:>6} {:>16} {:>16} {:>10}\n", "op", "nodes", "flops", "min bytes", "flops/B");
  for (const OpKindStats& k : s.by_op)
    t += fmt::format("{:<22} {:>6} {:>16} {:>16} {:>10}\n", k.op, k.nodes, k.cost.flops, k.cost.bytes,
                     intensity(k.cost));
  int64_t nodes = 0;
  for (const OpKindStats& k : s.by_op) nodes += k.nodes;
  t += fmt::format("{:<22} {:>6} {:>16} {:>16} {:>10}\n", "total", nodes, s.total.flops, s.total.bytes,
                   intensity(s.total));
  t += fmt::format("({:.3f} GFLOP, {:.3f} MB; a multiply-add is 2 flops; bytes: each op's inputs read once and its "
                   "result written once, before fusion)\n",
                   double(s.total.flops) * 1e-9, double(s.total.bytes) * 1e-6);
  return t;
}

}  // namespace spire::lowering
