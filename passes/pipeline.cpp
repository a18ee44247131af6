// PassPipeline: passes by point, run in order, each result checked (interface always, verifier when asked).
#include "passes/pipeline.h"

#include <fmt/format.h>

#include "base/named_values.h"
#include "ir/graph/verify.h"
#include "passes/interface.h"

namespace spire::passes {

using graph::GraphError;

std::string_view pass_point_name(PassPoint p) {
  switch (p) {
    case PassPoint::AfterImport: return "after_import";
    case PassPoint::AfterAutograd: return "after_autograd";
    case PassPoint::BeforeFusion: return "before_fusion";
    case PassPoint::Canonical: return "canonical";
  }
  return "?";
}

std::optional<PassPoint> pass_point_from_name(std::string_view name) {
  return value_named(kPassPoints, pass_point_name, name);
}

Pass rewrite_pass(std::string name, std::vector<Rule> rules, RewriteOptions opt) {
  return Pass{std::move(name), [rules = std::move(rules), opt](const graph::Graph& g) {
                return apply_rules(g, rules, opt).graph;
              }};
}

PassPipeline& PassPipeline::add(PassPoint point, Pass pass) {
  if (pass.name.empty()) throw GraphError("a pass needs a name (messages and dumps name it)");
  if (!pass.run) throw GraphError(fmt::format("pass '{}' has no function", pass.name));
  passes_[size_t(point)].push_back(std::move(pass));
  return *this;
}

bool PassPipeline::empty() const {
  for (const auto& v : passes_)
    if (!v.empty()) return false;
  return true;
}

graph::Graph PassPipeline::run(PassPoint point, graph::Graph g, const PassObserver& observer) const {
  const std::vector<Pass>& list = at(point);
  if (list.empty()) return g;
  if (verify)
    if (std::string problem = graph::verify(g); !problem.empty())
      throw GraphError(fmt::format("the graph given to the {} passes is invalid: {}", pass_point_name(point), problem));
  for (const Pass& pass : list) {
    const std::string who = fmt::format("pass '{}' ({})", pass.name, pass_point_name(point));
    graph::Graph after;
    try {
      after = pass.run(g);
    } catch (const GraphError& e) {
      throw GraphError(fmt::format("{}: {}", who, e.what()));
    }
    if (verify)
      if (std::string problem = graph::verify(after); !problem.empty())
        throw GraphError(fmt::format("{} produced an invalid graph: {}", who, problem));
    std::string change;
    try {
      change = interface_change(g, after);
    } catch (const GraphError& e) {  // an output or update naming no value: only the verifier says more
      throw GraphError(fmt::format("{} produced an invalid graph: {}", who, e.what()));
    }
    if (!change.empty()) throw GraphError(fmt::format("{} changed the graph's interface: {}", who, change));
    if (observer) observer(point, pass, after);
    g = std::move(after);
  }
  return g;
}

}  // namespace spire::passes
