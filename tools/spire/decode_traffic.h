// The least a decode step of `spire generate` must move to or from device memory, for its report's GB/s (as
// gpt-fast's "bandwidth achieved": bytes per token times tokens per second) and that figure's share of the device's
// copy bandwidth. A step is memory-bound: at batch 1 each weight is read once and used for one multiply-add.
#pragma once

#include <cstdint>
#include <functional>

#include "ir/graph/graph.h"

namespace spire::cli {

// The bytes of `g`'s parameters one step reads, each element counted as `stored_bytes(dtype)` (what the device
// holds it in: 2 for an f32 weight stored in half under a half precision policy). A parameter read only by gathers
// (a token or position table) counts the rows gathered, not the table: a step reads one row of GPT-2's 154 MB token
// embedding; one nothing reads counts nothing.
double weight_bytes_per_step(const graph::Graph& g, const std::function<double(graph::DType)>& stored_bytes);

// The key/value cache's bytes a step at position `pos` reads and writes at the least: the `pos` positions before it
// read and its own written, `row_bytes` each (one position of every layer's key and value). spire moves more today
// (docs/DECODERS.md: the cache is not written in place); this is the traffic a decoder needs, the figure's numerator.
inline double cache_bytes_of_step(int64_t pos, double row_bytes) { return double(pos + 1) * row_bytes; }

}  // namespace spire::cli
