// The built-in ops of one signature: one tensor in, one integer attribute `axis`, nothing else. The front
// ends map these by rule, each under its framework's spelling, rather than with a handler an op: adding such an op
// to the table is then all a front end needs (docs/ADDING_AN_OP.md).
#pragma once

#include <string_view>
#include <vector>

namespace spire::graph {

// Their names as the op table spells them, in table order.
std::vector<std::string_view> ops_along_one_axis();

}  // namespace spire::graph
