// --ops FILE_OR_DIR on the commands that build or read graphs: custom ops from op files (extend/op_file.h).
#include <fmt/format.h>

#include "extend/op_file.h"
#include "tools/spire/commands.h"

namespace spire::cli {

void add_ops_option(CLI::App* cmd) {
  // Loaded while the options are read, so the ops exist before the command parses a graph that names them.
  cmd->add_option_function<std::vector<std::string>>(
         "--ops",
         [](const std::vector<std::string>& paths) {
           for (const std::string& p : paths) {
             std::string names;
             for (const std::string& n : ext::load_ops(p)) names += (names.empty() ? "" : ", ") + n;
             fmt::print(stderr, "custom ops from {}: {}\n", p, names);
           }
         },
         "Custom ops from an op file, or every *.op file of a directory (repeatable; format: "
         "examples/custom_ops/README.md)")
      ->type_name("FILE_OR_DIR")
      ->expected(1)
      ->allow_extra_args(false)  // one path per --ops: a positional argument after it stays the command's
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace spire::cli
