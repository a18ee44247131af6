// Each group of `spire` subcommands lives in its own file and registers itself on the CLI11 app.
#pragma once

#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

#include "lowering/op_lowering.h"
#include "tuning/tuning_setup.h"

namespace spire::cli {

// A number above (or, with allow_zero, at least) zero. CLI11's PositiveNumber reports 0 as "not in range
// 0.000000 to 1797693...": this says the rule in words.
inline CLI::Validator positive_number(bool allow_zero = false) {
  return CLI::Validator(
      [allow_zero](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool ok = end != text.c_str() && *end == '\0' && (allow_zero ? v >= 0 : v > 0);
        if (ok) return {};
        return std::string("must be a ") + (allow_zero ? "non-negative" : "positive") + " number, not '" + text + "'";
      },
      allow_zero ? "NUMBER >= 0" : "NUMBER > 0");
}

// Thrown by a command whose exit status says more than 0 (success), 1 (failure) and 2 (argument error), after it
// printed what it had to say; main() returns `code`. `spire diff`: 1 when devices disagree, 3 for bad input.
struct CommandExit {
  int code = 1;
};

// --ops FILE_OR_DIR (repeatable): registers the custom ops of op files as the option is read
// (custom_ops_option.cpp).
void add_ops_option(CLI::App* cmd);
// --tune and --tuning-cache FILE (tuning/tuning_setup.h) on a command that compiles for a device.
inline void add_tuning_options(CLI::App* cmd, tuning::TuningFlags& flags) {
  cmd->add_flag("--tune", flags.tune,
                "Before compiling, time every candidate config of each tunable kernel (of the ops " +
                    lowering::tunable_op_names() +
                    ") that the tuning cache has no result for on this device and driver, keep the fastest in the "
                    "cache (saved after each kernel: a run cut short keeps what it timed, and the next --tune goes on "
                    "from there) and print a table of heuristic and tuned times. Without --tune the results already in "
                    "the cache are used, with no timing");
  cmd->add_option("--tuning-cache", flags.cache_file,
                  "The tuning cache file (default: $SPIRE_CACHE_DIR/tuning.txt, else $XDG_CACHE_HOME/spire/tuning.txt, "
                  "else ~/.cache/spire/tuning.txt); a file that does not exist holds no results (every kernel's "
                  "heuristic config)");
}

// --dump DIR on a command that compiles for a device: every compilation stage written to DIR (docs/DUMP.md).
// `stages` names what this command's dump holds first; `more` is appended (how the option combines with others).
inline CLI::Option* add_dump_option(CLI::App* cmd, std::string& dir, const std::string& stages, const std::string& more) {
  return cmd->add_option("--dump", dir,
                         "Write every compilation stage to this folder: " + stages +
                             ", decomposed, fused, plan, stats, and each kernel's IR, SPIR-V and PTX (docs/DUMP.md)" + more);
}

void register_device_commands(CLI::App& app);  // spire devices            (cmd_devices.cpp)
void register_kernel_commands(CLI::App& app);  // spire kernel ...         (cmd_kernel.cpp)
void register_example_commands(CLI::App& app); // spire examples          (cmd_examples.cpp)
void register_graph_commands(CLI::App& app);   // spire graph print|eval|grad  (cmd_graph.cpp)
void register_lenet_commands(CLI::App& app);   // spire lenet export|init     (cmd_lenet.cpp)
void register_train_commands(CLI::App& app);   // spire train lenet, spire eval lenet (cmd_train.cpp)
void register_test_ops_commands(CLI::App& app); // spire test-ops              (cmd_test_ops.cpp)
void register_import_commands(CLI::App& app);   // spire import MODEL.onnx     (cmd_import.cpp)
void register_run_commands(CLI::App& app);      // spire run MODEL             (cmd_run.cpp)
void register_onnx_test_commands(CLI::App& app); // spire onnx-test DIR...     (cmd_onnx_test.cpp)
void register_compile_commands(CLI::App& app);   // spire compile MODEL -o B    (cmd_compile.cpp)
void register_diff_commands(CLI::App& app);      // spire diff MODEL --inputs IN  (cmd_diff.cpp)
void register_reduce_commands(CLI::App& app);    // spire reduce MODEL --inputs IN -o SMALL.graph (cmd_reduce.cpp)
void register_generate_commands(CLI::App& app);  // spire generate MODEL --prompt-ids 1,2,3  (cmd_generate.cpp)

}  // namespace spire::cli
