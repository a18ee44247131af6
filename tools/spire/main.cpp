// spire: the command-line front door (devices, kernels, graphs, LeNet).
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "tools/spire/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"spire: one graph, compiled once, runs on every Vulkan device (SPIR-V) and on NVIDIA (PTX)"};
  app.require_subcommand(1);
  spire::cli::register_device_commands(app);
  spire::cli::register_kernel_commands(app);
  spire::cli::register_example_commands(app);
  spire::cli::register_graph_commands(app);
  spire::cli::register_lenet_commands(app);
  spire::cli::register_train_commands(app);
  spire::cli::register_test_ops_commands(app);
#ifdef SPIRE_HAVE_ONNX
  spire::cli::register_import_commands(app);
  spire::cli::register_run_commands(app);
  spire::cli::register_onnx_test_commands(app);
  spire::cli::register_compile_commands(app);
  spire::cli::register_diff_commands(app);
  spire::cli::register_reduce_commands(app);
  spire::cli::register_generate_commands(app);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the message (or the help). CLI11's own codes (106 for a missing required option, ...)
    // mean nothing to a shell script; every argument error is 2, as in most Unix tools, --help stays 0.
    return app.exit(e) == static_cast<int>(CLI::ExitCodes::Success) ? 0 : 2;
  } catch (const spire::cli::CommandExit& e) {
    return e.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spire: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
