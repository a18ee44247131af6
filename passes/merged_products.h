// Products that read one A by weights merged into one product (`spire generate`, docs/DECODERS.md): matmuls
// x @ w1, x @ w2, ... of one x by float parameters w_i [K, N_i] become one x @ [w1 w2 ...] ([K, sum N_i]), each old
// result a slice of the new one's last axis. A Llama layer's q, k and v projections (one x: the attention's norm) and
// its MLP's gate and up projections (the MLP's norm) are each one product then: a decode step at batch 1 is a chain of
// small launches, each paying its latency and, where a norm is computed in the product's reads of x (RowNorm), the
// norm's statistics again; one product of the summed width pays them once and gives the GPU more workgroups. At one
// row of x the slices are windows of the result's buffer (no launch); at more rows (a prefill) each is a strided read.
// Where every product's one reader adds a bias of its own (a Qwen layer's q, k and v), the biases are merged too and
// the slices taken after their one add, which stays the merged product's epilogue.
// GPT-2's exports already have one fused QKV weight and its MLP's two products read different x: nothing to merge.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::passes {

struct MergedProducts {
  graph::Graph graph;
  int merged = 0;  // products that became slices of a merged one
};

// `g` with every group of two or more matmuls that read one left operand x and, each, a float parameter [K, N_i] of one
// dtype that nothing else reads, replaced by one matmul of x by a new parameter (the weights side by side along N, in
// the group's order in g; named after them, so that two graphs of one model name it alike) and each old result by a
// slice of the new one's last axis, under the old node's name; with biases [N_i] of that dtype read by nothing but each
// member's one reader, an add, the add of the biases side by side, sliced in place of each member's add. A weight, bias
// or biased product that is also an output or a state is not merged. Every other node, leaf, output and state update is
// as it was. `weights` holds the parameters' values by name (those merged must be there): each group's are replaced by
// the merged one's (in the first member's place), their memory released as each is copied (a decoder's weights are most
// of the host's memory).
MergedProducts merge_products_sharing_a(const graph::Graph& g,
                                        std::vector<std::pair<std::string, graph::Tensor>>& weights);

}  // namespace spire::passes
