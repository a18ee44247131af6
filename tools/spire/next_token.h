// The end of a decode step's graph (`spire generate`, docs/DECODERS.md): the argmax of the logits taken on the device,
// so that a step moves one token id out instead of the vocabulary's logits.
#pragma once

#include <cstdint>

#include "ir/graph/graph.h"

namespace spire::cli {

// The output's name.
inline constexpr const char* kNextToken = "spire.next_token";

// Adds output kNextToken to `g`: the index of the largest of `logits`' `vocab` elements (the first of equal ones, as
// torch.argmax), an i64 [] (the graph op argmax: one launch, ir/graph/ops/argmax_ops.cpp). Positions are integers, so
// no precision policy stores them in half (bf16 holds integers exactly only up to 256; a vocabulary is tens of
// thousands).
void add_next_token(graph::Graph& g, graph::Value logits, int64_t vocab);

}  // namespace spire::cli
