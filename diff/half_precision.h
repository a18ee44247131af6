// --precision f16|bf16: the model run with half-precision storage (ops compute in f32 and round each result once,
// docs/HALF_PRECISION.md) and compared with the float64 reference of the model as given, to find the nodes where
// half precision loses the most. Polygraphy's `debug precision` question, answered per value.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "diff/capture.h"
#include "diff/compare.h"
#include "ir/graph/graph.h"
#include "passes/half_storage.h"

namespace spire::diff {

// The conversion itself (a graph's f32 values stored in half, and its feeds rounded) is passes/half_storage.h's, the one
// the bf16/f16 precision policies run too.
using passes::HalfOptions;
using passes::to_half;

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
// The smallest k such that keeping in f32 the first k values of `ranked` (error_growth's order) brings every output
// within tolerance; `outputs_within(keep)` runs the model with `keep` in f32 and says whether its outputs agree. A
// bisection over k, which assumes that keeping more never hurts: about log2(ranked.size()) + 1 runs. Not found when
// keeping all of `ranked` is not enough.
struct KeepProposal {
  bool found = false;
  std::vector<std::string> keep;
  int runs = 0;
};
KeepProposal propose_f32_set(const std::vector<std::string>& ranked,
                             const std::function<bool(const std::set<std::string>&)>& outputs_within);

// Runs to_half(g, half, keep) on `device` with `half_feeds` (to_half of the feeds) and says whether every graph output
// is within the bound `half_run` (the comparison of the all-half run) held it to.
bool outputs_within(const graph::Graph& g, graph::DType half, const std::set<std::string>& keep,
                    const std::map<std::string, graph::Tensor>& half_feeds, rt::Device& device,
                    const lowering::CompileOptions& options, const Capture& reference, const Comparison& half_run);

// The `count` values whose error grows most, largest first.
std::vector<PrecisionRow> error_growth(const Comparison& c, size_t count);
std::string error_growth_text(const Comparison& c, const std::vector<PrecisionRow>& rows, graph::DType half);

}  // namespace spire::diff
