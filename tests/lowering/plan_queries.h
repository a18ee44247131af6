// What a lowered plan launches, for tests that check which kernels a fusion leaves: kernel names in launch order,
// how many start with a prefix, and whether a node still has a launch of its own.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "lowering/plan.h"

namespace spire::lowering::testing_support {

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
