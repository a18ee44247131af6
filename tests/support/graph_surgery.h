// Test-only write access to a Graph's storage, to build the broken graphs the verifier must catch
// (ir/graph/verify.h). Graph names this struct as a friend; nothing outside the tests includes this file.
#pragma once

#include <string>
#include <vector>

#include "ir/graph/graph.h"

namespace spire::graph {

struct GraphTestAccess {
  static std::vector<Node>& nodes(Graph& g) { return g.nodes_; }
  static Node& node(Graph& g, Value v) { return g.nodes_.at(size_t(v.id)); }
  static std::vector<NamedOutput>& outputs(Graph& g) { return g.outputs_; }
  static std::vector<StateUpdate>& updates(Graph& g) { return g.updates_; }
  // Renames a node in storage only, leaving the name index stale (what a careless copy would do).
  static void rename_in_storage(Graph& g, Value v, std::string name) { g.nodes_.at(size_t(v.id)).name = std::move(name); }
  // Appends a node as given, with no checks (the name is indexed so that lookups see it).
  static Value append_unchecked(Graph& g, Node n) {
    Value v{int32_t(g.nodes_.size())};
    g.by_name_.emplace(n.name, v.id);
    g.nodes_.push_back(std::move(n));
    return v;
  }
};

}  // namespace spire::graph
