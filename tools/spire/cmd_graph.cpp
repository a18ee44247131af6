// spire graph print|eval|grad (to be written with the graph IR).
#include "tools/spire/commands.h"

namespace spire::cli {
void register_graph_commands(CLI::App&) {}
}  // namespace spire::cli
