// spire lenet export (to be written with the nn front end).
#include "tools/spire/commands.h"

namespace spire::cli {
void register_lenet_commands(CLI::App&) {}
}  // namespace spire::cli
