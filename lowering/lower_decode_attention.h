// The launch of an attention at a few queries (fuse.h's absorbed attention, kernels/decode_attention_kernel.h): the
// product of the attention weights with the values computes its scores' product, the pointwise tree over the scores (a
// scale, a mask, its leaves loaded through their broadcasts as an epilogue's are) and the weights in the same launch.
#pragma once

#include "ir/graph/graph.h"
#include "lowering/fuse.h"
#include "lowering/lowering_context.h"

namespace spire::lowering {

// `v`: the product with the values; `a`: absorbed_attention(graph, v).
void lower_decode_attention(LoweringContext& ctx, graph::Value v, const AbsorbedAttention& a);

}  // namespace spire::lowering
