// The canonical passes: what every compilation does to a graph before the caller's before_fusion passes and fusion, so
// that the kernels see fewer ops in fewer forms. One list, in the order the passes run:
//   fuse_norms            layer and RMS normalization chains -> layer_norm, rms_norm (fuse_norms.h)
//   compute_in_f32        f16/bf16 ops that compute in f32 get explicit casts (compute_in_f32.h)
//   decompose             mean -> sum and a multiply (decompose.h)
//   fold_transposes       transpose pairs cancel, (a x b)^T -> b^T x a^T (fold_transposes.h)
//   sum_through_max_pool  a sum of a max pool's gradient reads the pooled gradient (sum_through_max_pool.h)
//   pool_grad_by_argmax   poolings' gradients read the forward pass's positions (pool_grad_by_argmax.h)
// lower(), graph_stats(), the tuner's keys and --dump all start from canonicalize(), so what they show is what runs.
#pragma once

#include <vector>

#include "ir/graph/graph.h"
#include "passes/pipeline.h"

namespace spire::passes {

// The list above, in order.
const std::vector<Pass>& canonical_passes();

// Runs canonical_passes() in order through PassPipeline::run (each result keeps the graph's interface, and is
// verified where the pipeline verifies), reporting each to `observer` at PassPoint::Canonical.
graph::Graph canonicalize(const graph::Graph& g, const PassObserver& observer = {});

// canonicalize(), then `pipeline`'s before_fusion passes (null: none). Throws GraphError from a failing pass, naming
// it and its point.
graph::Graph prepare_for_fusion(const graph::Graph& g, const PassPipeline* pipeline, const PassObserver& observer = {});

}  // namespace spire::passes
