// `spire reduce --tuning`: which of the tuning cache's choices a failure depends on, as Polygraphy's `debug build`
// sorts TensorRT's tactics into good and bad. The graph (the reduced cut, whose failure is known) is run once with
// every template's heuristic config; if it still fails, tuning is not to blame. Else it is run with each cache
// choice it uses alone: a choice with which it fails is bad, one with which it passes good.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "diff/reduce.h"
#include "lowering/tuning_choices.h"

namespace spire::diff {

struct ConfigVerdict {
  lowering::TuningKey key;
  lowering::heavy::Config config;
  bool bad = false;
  std::string why;  // how the graph failed with this choice alone, or "passes"
};

struct TuningBlame {
  // The graph passes with every heuristic config: its failure comes from the cache's choices.
  bool depends = false;
  std::string heuristic_why;            // how it fails with the heuristics (when !depends)
  std::vector<ConfigVerdict> verdicts;  // each choice of `choices` that the graph's tunable nodes use, by key
  size_t runs = 0;
};

// `options.compile.tuning` is replaced for each run; `target` is what failure_of follows (Reduction::target).
TuningBlame blame_tuning(const graph::Graph& g, const std::map<std::string, graph::Tensor>& feeds, rt::Device& device,
                         const ReduceOptions& options, const lowering::MapTuningChoices& choices,
                         const std::string& target);

}  // namespace spire::diff
