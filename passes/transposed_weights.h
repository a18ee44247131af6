// Weights stored along K for a decoder's products (`spire generate`, docs/DECODERS.md): every matmul by a float
// parameter w [K, N] reads it as B^T instead, from a parameter w.t [N, K] holding its transpose, transposed here on the
// host at load time. A decoder step's products are few-rows products (kernels/matvec_kernel.h), each bound by reading
// its weight once, and they read B^T faster than B as a model stores it ([K, N]: ONNX exports of Linear and Conv1D
// layers): on an H200 in bf16, 4.3-5.1 us against 5.3-7.3 for GPT-2's layers and 9.6 against 14.5 us for Llama 1B's
// MLP down product (docs/DECODERS.md), since a workgroup then reads whole rows of K along memory. The device holds
// only the transposed weights, so this costs no memory; the product's transpose (a permute read in place,
// lowering/fuse.cpp's absorbed_transpose) costs no launch.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::passes {

struct TransposedWeights {
  graph::Graph graph;
  int transposed = 0;  // the weights replaced
};

// `g` with every float parameter w [K, N] whose every reader is a matmul taking it as its right operand replaced by
// a parameter w.t [N, K] (same dtype) that each of those matmuls reads through a transpose; other nodes, names, leaves,
// outputs and state updates are as they were. `weights` holds the parameters' values by name (those replaced must be
// there); each replaced one becomes w.t's, renamed and transposed where it is: a decoder's weights are most of the
// host's memory (Llama 1B's 5 GB as doubles), so one spare buffer per weight size is all this allocates, on as many
// threads as the machine has. A weight also read otherwise (a token embedding gathered and used as the head) stays as
// it is.
TransposedWeights transpose_matmul_weights(const graph::Graph& g,
                                           std::vector<std::pair<std::string, graph::Tensor>>& weights);

}  // namespace spire::passes
