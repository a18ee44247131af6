// Int8 weights for memory-bound inference (`spire generate --int8`, docs/DECODERS.md): every matmul by a constant f32
// weight becomes matmul_int8_weight (ir/graph/ops/int8_matmul_ops.cpp), its weight quantized here, at load time, from
// the f32 values: symmetric, one scale per output channel (column n of the weight [K, N]). A decoder's step reads
// each weight once, so a quarter of the bytes is what bounds its speed; the f32 weights are dropped from the graph,
// so the device holds only the int8 ones and their scales.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::passes {

// A weight [K, N] quantized by output channel: scale[n] = max_k |w[k, n]| / 127 (1 for a column of zeros), q[n, k] =
// round(w[k, n] / scale[n]), in [-127, 127] (symmetric: -128 is never used), packed four to an i32 word as
// matmul_int8_weight reads them (words [N, ceil(K/4)], byte k % 4 of word k / 4, the last word's padding bytes 0).
// Each weight is off by at most scale[n] / 2, half a step.
struct Int8Columns {
  graph::Tensor words;  // i32 [N, ceil(K/4)]
  graph::Tensor scale;  // f32 [N]
};
Int8Columns quantize_columns(const graph::Tensor& w);

struct Int8Graph {
  graph::Graph graph;
  // The weights the graph's new parameters need (<weight>.int8 and <weight>.scale), to set beside the others.
  std::vector<std::pair<std::string, graph::Tensor>> weights;
  int quantized = 0;  // the weights replaced
};

// `g` with every matmul(x [.., M, K], w) whose w is an f32 parameter [K, N] read only as matmuls' right operand
// replaced by matmul_int8_weight(x, w.int8, w.scale) under the matmul's name, and w itself dropped; other nodes,
// leaves, outputs and state updates as they are. `weights` holds the parameters' values by name (those replaced
// must be there). A weight also read otherwise (a token embedding gathered and used as the head) stays f32.
Int8Graph quantize_matmul_weights(const graph::Graph& g, const std::vector<std::pair<std::string, graph::Tensor>>& weights);

}  // namespace spire::passes
