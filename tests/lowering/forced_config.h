// A graph compiled with one tunable kernel's config forced, as a tuning cache holding it would give: how the tests
// run every candidate of a template against the float64 evaluator.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ir/graph/graph.h"
#include "lowering/executable.h"
#include "kernels/tuning_config.h"
#include "lowering/tuning_choices.h"

namespace spire::lowering::testing_support {

// `g` compiled for `device` with `config` for tuning key `key` (every other kernel its heuristic), `inputs` set; the
// caller checks the plan and runs the step.
inline std::unique_ptr<Executable> compile_forced(const graph::Graph& g, rt::Device& device, const TuningKey& key,
                                                  const heavy::Config& config,
                                                  const std::map<std::string, graph::Tensor>& inputs) {
  MapTuningChoices choices;  // read by compile() only
  choices.configs[key] = config;
  std::unique_ptr<Executable> exe = compile(g, device, {.tuning = &choices});
  for (const auto& [name, t] : inputs) exe->set(name, t);
  return exe;
}

}  // namespace spire::lowering::testing_support
