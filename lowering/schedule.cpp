#include "lowering/schedule.h"

namespace spire::lowering {

std::vector<graph::Value> schedule(const graph::Graph& g) {
  std::vector<bool> needed(size_t(g.size()), false);
  for (const graph::NamedOutput& o : g.outputs()) needed[size_t(o.value.id)] = true;
  for (const graph::StateUpdate& u : g.state_updates()) needed[size_t(u.value.id)] = true;
  // Users come after their inputs, so one backward sweep marks everything needed.
  for (int32_t id = g.size(); id-- > 0;)
    if (needed[size_t(id)])
      for (graph::Value in : g.node(id).inputs) needed[size_t(in.id)] = true;
  std::vector<graph::Value> order;
  for (int32_t id = 0; id < g.size(); ++id)
    if (needed[size_t(id)] && !graph::is_leaf(g.node(id).op)) order.push_back(graph::Value{id});
  return order;
}

}  // namespace spire::lowering
