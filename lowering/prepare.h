// The graph fusion and the kernels work on: the graph after compute_in_f32, decompose, fold_transposes,
// sum_through_max_pool and pool_grad_by_argmax, then after the before_fusion rewrite passes of the pipeline the caller compiles with
// (passes/pipeline.h), if any. lower(), graph_stats() and
// the dump all start from it, so what they show is what runs.
#pragma once

#include "ir/graph/graph.h"
#include "passes/pipeline.h"

namespace spire::lowering {

// The fixed passes before the user's: compute_in_f32, decompose, fold_transposes, sum_through_max_pool, then
// pool_grad_by_argmax. Also what
// the tuner and the dump start from, so tuning keys and dumped stages are the ones lowering sees.
graph::Graph canonicalize(const graph::Graph& g);

// `passes` may be null (no rewrite passes). Throws GraphError from a failing pass, naming it.
graph::Graph prepare_for_fusion(const graph::Graph& g, const passes::PassPipeline* passes,
                                const passes::PassObserver& observer = {});

}  // namespace spire::lowering
