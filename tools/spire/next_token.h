// The end of a decode step's graph (`spire generate`, docs/DECODERS.md): the argmax of the logits taken on the device,
// so that a step moves one token id out instead of the vocabulary's logits.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/graph/tensor.h"

namespace spire::cli {

// The output's name.
inline constexpr const char* kNextToken = "spire.next_token";

// Adds output kNextToken to `g`: the index of the largest of `logits`' `vocab` elements (the first of equal ones, as
// torch.argmax), an i32 [] computed as -max(-id) over the maxima, and the parameter of ids it needs to `weights`
// ("spire.token_ids", i32 [vocab]). The ids are integers so that no precision policy stores them in half: bf16 holds
// integers exactly only up to 256, and a vocabulary is tens of thousands.
void add_next_token(graph::Graph& g, std::vector<std::pair<std::string, graph::Tensor>>& weights, graph::Value logits,
                    int64_t vocab);

}  // namespace spire::cli
