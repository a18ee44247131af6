// Pass 0, compute_in_f32: f16 and bf16 are storage precisions (graph.h). Every op that reads or produces one
// is rewritten to compute in f32: its half inputs are cast up, the op runs on f32, and a result of a half dtype is
// cast back down, rounding once per op as PyTorch's half kernels do (they too accumulate matmuls, convolutions
// and reductions in f32). Fusion folds these casts into the kernels on either side, so a chain of pointwise ops
// still reads and writes 16-bit words and rounds in registers.
//
// Ops that only move elements (reshape, flatten, permute, broadcast_to) stay in the half dtype: they copy 16-bit
// words exactly. So do the ops that copy elements chosen by indices (slice, concat, gather, write_at) when all their
// data inputs are of the result's half dtype. A cast between two types that are not f32 goes through f32 (bf16 converts only to and from f32 in
// kernels, kir/types.h).
//
// The result keeps every leaf, output and state update under its name; a rewritten node's name goes to the
// value that replaces it (the cast back to its dtype), and the f32 node is named "<name>.f32".
#pragma once

#include "ir/graph/graph.h"

namespace spire::passes {

graph::Graph compute_in_f32(const graph::Graph& g);

}  // namespace spire::passes
