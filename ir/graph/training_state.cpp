#include "ir/graph/training_state.h"

#include <fmt/format.h>

namespace spire::graph {

std::map<std::string, Tensor> initial_states(const Graph& g) {
  std::map<std::string, Tensor> out;
  for (Value v : g.states()) {
    const Node& n = g.node(v);
    out[n.name] = Tensor(n.type.dtype, n.type.shape, n.attrs.get_float("init"));
  }
  return out;
}

void write_back_state_updates(const Graph& g, const std::map<std::string, Tensor>& results,
                              std::map<std::string, Tensor>& persistent) {
  for (const StateUpdate& u : g.state_updates()) {
    const std::string& name = g.node(u.target).name;
    auto it = results.find(name);
    if (it == results.end())
      throw GraphError(fmt::format("write_back_state_updates: the results have no new value for '{}'", name));
    persistent[name] = it->second;
  }
}

}  // namespace spire::graph
