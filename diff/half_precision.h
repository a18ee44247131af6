// --precision f16|bf16: the model run with half-precision storage (ops compute in f32 and round each result once,
// docs/HALF_PRECISION.md) and compared with the float64 reference of the model as given, to find the nodes where
// half precision loses the most. Polygraphy's `debug precision` question, answered per value.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "diff/capture.h"
#include "diff/compare.h"
#include "ir/graph/graph.h"

namespace spire::diff {

// `g` with every f32 value in `half` (f16 or bf16): f32 leaves are declared half, every other node is rebuilt with
// the same op, inputs and attributes (so its result type follows its inputs), a cast to f32 becomes a cast to `half`.
// Names, outputs and state updates are kept. Values of other dtypes (ints, bool, f64) are left as they are.
graph::Graph to_half(const graph::Graph& g, graph::DType half);

// The feeds of to_half(g): every f32 tensor rounded to `half`.
std::map<std::string, graph::Tensor> to_half(const std::map<std::string, graph::Tensor>& feeds, graph::DType half);

// Values of the half graph (by node name) relabelled with the dtype `g` (the model as given) has for them (exact: every
// half number is an f32), so compare() can hold them against the model's reference and re-run nodes alone on them.
std::map<std::string, graph::Tensor> widened(std::map<std::string, graph::Tensor> half_values, const graph::Graph& g);
// The same for every value of a capture.
Capture widened(const Capture& half_capture, const graph::Graph& g);

// How much each value's error grows in half precision: its error against the reference minus the largest error of its
// inputs (`growth`), and the error the node alone makes from this device's inputs (`own`, the rounding of its result
// and what its arithmetic loses).
struct PrecisionRow {
  std::string name, op;
  double error = 0, growth = 0, own = 0;
};
// The `count` values whose error grows most, largest first.
std::vector<PrecisionRow> error_growth(const Comparison& c, size_t count);
std::string error_growth_text(const Comparison& c, const std::vector<PrecisionRow>& rows, graph::DType half);

}  // namespace spire::diff
