// The devices a command line names (--device all, --devices D1,D2): the one place that resolves such a list against
// the devices present, for the CLI's commands and the benchmarks alike.
#pragma once

#include <string>
#include <vector>

namespace spire::rt {

// For "all", every device present (Error when there is none); else each name of a comma-separated list, in its
// order, each checked against those present (Error naming it and listing them). Nothing is opened.
std::vector<std::string> device_ids(const std::string& spec);

}  // namespace spire::rt
