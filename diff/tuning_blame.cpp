#include "diff/tuning_blame.h"

#include <set>

#include "lowering/tunable.h"
#include "lowering/tunable_ops.h"

namespace spire::diff {

TuningBlame blame_tuning(const graph::Graph& g, const std::map<std::string, graph::Tensor>& feeds, rt::Device& device,
                         const ReduceOptions& options, const lowering::MapTuningChoices& choices,
                         const std::string& target) {
  TuningBlame blame;
  auto failure_with = [&](const lowering::MapTuningChoices& only) {
    ReduceOptions o = options;
    o.compile.tuning = &only;
    ++blame.runs;
    return failure_of(try_on_device(g, feeds, device, o), options.until, target);
  };
  blame.heuristic_why = failure_with({});
  blame.depends = blame.heuristic_why.empty();
  if (!blame.depends) return blame;
  std::set<lowering::TuningKey> seen;  // nodes of the same shapes share a key
  for (const lowering::TunableOp& op : lowering::tunable_ops(g, device.info())) {
    const auto chosen = choices.configs.find(op.key);
    if (chosen == choices.configs.end() || !seen.insert(op.key).second) continue;
    lowering::MapTuningChoices only;
    only.configs.insert(*chosen);
    ConfigVerdict v{op.key, chosen->second, false, failure_with(only)};
    v.bad = !v.why.empty();
    if (!v.bad) v.why = "passes";
    blame.verdicts.push_back(std::move(v));
  }
  return blame;
}

}  // namespace spire::diff
