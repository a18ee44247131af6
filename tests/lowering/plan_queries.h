// What a lowered plan launches, for tests that check which kernels a fusion leaves: kernel names in launch order,
// how many start with a prefix, and whether a node still has a launch of its own; and the graph as lowering sees it
// with its fusion plan.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "lowering/fuse.h"
#include "lowering/plan.h"
#include "passes/canonical.h"

namespace spire::lowering::testing_support {

// The graph canonicalized (as lowering sees it) and its fusion plan.
struct FusionOf {
  graph::Graph g;
  Fusion f;
};
inline FusionOf fusion_of(const graph::Graph& original) {
  FusionOf p{passes::canonicalize(original), {}};
  p.f = plan_fusion(p.g);
  return p;
}

// The last node of `g` with op `op` (invalid if none).
inline graph::Value last_node_of(const graph::Graph& g, graph::OpKind op) {
  graph::Value last;
  for (graph::Value v : g.values())
    if (g.node(v).op == op) last = v;
  return last;
}

inline std::vector<std::string> kernels_of(const Plan& plan) {
  std::vector<std::string> out;
  for (const Launch& l : plan.launches) out.push_back(plan.kernels.at(size_t(l.kernel)).name);
  return out;
}

inline int count_prefix(const std::vector<std::string>& names, const std::string& prefix) {
  return int(std::count_if(names.begin(), names.end(), [&](const std::string& n) { return n.rfind(prefix, 0) == 0; }));
}

inline bool node_launched(const Plan& plan, const std::string& node) {
  return std::any_of(plan.launches.begin(), plan.launches.end(), [&](const Launch& l) { return l.node == node; });
}

}  // namespace spire::lowering::testing_support
