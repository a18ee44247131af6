// A small graph that uses every op of the op table at least once (tests of the printer and parser).
#pragma once

#include "ir/graph/graph.h"

namespace spire::graph::testing {

Graph every_op_graph();

}  // namespace spire::graph::testing
