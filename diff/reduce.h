// `spire reduce`: shrinks a model that fails on a device to the smallest piece of it that still fails, as Polygraphy's
// `debug reduce` does, but judged value by value against the float64 reference (diff/compare.h).
//
// A candidate is a cut (diff/cut.h): some of the model's nodes, with every value they read from outside the cut fed
// from the float64 reference run. One run is one candidate compiled and run on the device, every value captured
// (capture_device) and compared with the reference of the same cut. The search:
//   1. the whole model, run once as `spire diff` runs it: what fails (--until) and the value it fails at first, the
//      target (the first divergence, or the first NaN/Inf);
//   2. the target alone, its inputs from the reference: a node wrong by itself fails here, and the search ends
//      after 2 runs;
//   3. else the target with every value it is computed from (its ancestors); if that passes too, the failure needs
//      values after the target (a fused consumer): bisect, in topological order, the last node e whose ancestors
//      still fail;
//   4. bisect, in topological order, the first of those ancestors to keep: the shortest suffix that still fails.
// With one faulty node in a model of N values that is 2 runs when the node is wrong alone, and at most
// ceil(log2 N) + 3 when its error only shows after values before it added theirs. A cut the search tried before is
// not run again.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diff/compare.h"
#include "diff/cut.h"
#include "diff/tolerance.h"
#include "ir/graph/graph.h"
#include "lowering/executable.h"
#include "runtime/device.h"

namespace spire::diff {

// What counts as failing (--until).
enum class Until : uint8_t {
  FirstDivergence,  // the model's first divergence (its first value off) is still off
  Nan,              // some value is NaN or infinite on the device where the reference has a number
  Exit,             // `spire diff` would exit non-zero: some value off, or the device cannot run the model
};
std::optional<Until> until_from_name(std::string_view name);  // "first-divergence", "nan", "exit"
std::string_view until_name(Until u);

struct ReduceOptions {
  Until until = Until::FirstDivergence;
  ToleranceOverride tolerance{};
  lowering::CompileOptions compile{};  // passes and tuning choices, the same for every run
};

// One run of the search, for the log.
struct ReduceRun {
  std::string what;  // "the whole model", "act alone", ...
  size_t nodes = 0;  // non-leaf values of the candidate
  bool fails = false;
  std::string why;  // how it failed ("act is off: error 1.41e-01 > 1.00e-05"), or "passes"
};

struct Reduction {
  size_t model_values = 0;  // N: the model's non-leaf values
  // Whether the whole model fails as `until` says; false: nothing to reduce (the rest is empty then; also where the
  // device cannot run the model at all under first-divergence, which has no divergence to follow).
  bool fails = false;
  std::string why;                 // how the whole model fails (ReduceRun::why), or why it does not
  std::string target;              // the value the search starts from (empty where the device could not run the model)
  Cut smallest;                    // the smallest cut that failed
  std::vector<std::string> nodes;  // its non-leaf values' names, topological order
  Comparison comparison;           // the smallest cut's comparison with its reference
  std::vector<ReduceRun> runs;
};

// Runs the search (above) for graph `g` with `feeds` (every leaf by node name) on `device`. `on_run` hears of each
// run as it ends (may be empty).
Reduction reduce(const graph::Graph& g, const std::map<std::string, graph::Tensor>& feeds, rt::Device& device,
                 const ReduceOptions& options, const std::function<void(const ReduceRun&)>& on_run = {});

// One candidate on the device, compared with the float64 reference of the same graph (what the search runs; also
// what a test of the written result runs). A device that cannot run the graph gives a comparison with `failure` set.
Comparison try_on_device(const graph::Graph& g, const std::map<std::string, graph::Tensor>& feeds, rt::Device& device,
                         const ReduceOptions& options);

// Whether a comparison fails as `until` says, and how ("" when it passes). `target`: the value first-divergence
// follows (it must be off).
std::string failure_of(const Comparison& c, Until until, const std::string& target);

}  // namespace spire::diff
