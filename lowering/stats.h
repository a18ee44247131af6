// The work a compiled graph does, counted from the op table's cost rules (ir/graph/op_table.h OpCost): per op
// kind and in total, over the nodes the plan runs (the graph after decompose, only what an output or a state
// update needs). `spire run --stats` and `spire graph eval --stats` print it.
//
// bytes are each op's own minimum (its inputs read once, its result written once), summed: what the ops
// would move if every one were its own kernel. Fusion keeps fused values in registers, so the plan moves
// less; plan_bytes() counts the plan's side.
#pragma once

#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/op_table.h"
#include "passes/pipeline.h"

namespace spire::lowering {

struct OpKindStats {
  std::string op;       // op name
  int64_t nodes = 0;    // how many nodes of that op the plan runs
  graph::OpCost cost;   // summed over them
};

struct GraphStats {
  std::vector<OpKindStats> by_op;  // most flops first (then name)
  graph::OpCost total;
};

// `passes`: the pipeline `g` is compiled with, whose before_fusion passes change what runs (may be null).
GraphStats graph_stats(const graph::Graph& g, const passes::PassPipeline* passes = nullptr);

// A table: op, nodes, flops, bytes, flops per byte; then the totals.
std::string stats_text(const GraphStats& s);

struct Plan;
// The other side of fusion: the bytes of every buffer each launch binds, once per launch, plus the state
// copies (read and written). Fused values have no buffer, so this is what the plan moves at least.
uint64_t plan_bytes(const Plan& p);

}  // namespace spire::lowering
