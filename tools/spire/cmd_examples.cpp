// spire examples: runs the seed articles' kernels on one device or every device and checks them against
// the CPU, printing one table row per run.
#include <fmt/format.h>

#include <stdexcept>

#include "examples/example_runner.h"
#include "runtime/device.h"
#include "runtime/device_ids.h"
#include "tools/spire/commands.h"

namespace spire::cli {

namespace {

struct ExamplesOptions {
  std::string device;
  uint64_t size = 1000003;
  uint64_t seed = 1;
};

bool run_on(rt::Device& dev, const ExamplesOptions& o) {
  bool ok = true;
  for (const auto& ex : examples::examples()) {
    auto r = ex.run(dev, o.size, o.seed);
    ok = ok && r.passed;
    fmt::print("{:<10} {:<12} {:>10} {:>12.3g} {:>10.3g} {:>9} {:>10.3f}  {}\n", dev.info().id, r.example, r.n,
               r.max_rel_error, r.tolerance, r.unwritten, r.device_ms, r.passed ? "pass" : "FAIL");
  }
  return ok;
}

void run(const ExamplesOptions& o) {
  fmt::print("{:<10} {:<12} {:>10} {:>12} {:>10} {:>9} {:>10}  {}\n", "device", "example", "n", "max rel err",
             "tolerance", "unwritten", "device ms", "result");
  bool ok = true;
  // "all" or one name (open_device's errors name a bad one and list those present).
  for (const std::string& id : o.device == "all" ? rt::device_ids("all") : std::vector{o.device}) {
    auto dev = rt::open_device(id);
    ok = run_on(*dev, o) && ok;
  }
  if (!ok) throw std::runtime_error("an example did not match the CPU (see the table above)");
}

}  // namespace

void register_example_commands(CLI::App& app) {
  auto o = std::make_shared<ExamplesOptions>();
  auto* cmd = app.add_subcommand("examples", "Run the example kernels on a device and check them against the CPU");
  cmd->add_option("--device", o->device, "Device name (vulkan:N, cuda:N), 'all', or empty for the best present");
  cmd->add_option("--size", o->size, "Elements per example (default 1000003)");
  cmd->add_option("--seed", o->seed, "Seed of the random inputs (default 1)");
  cmd->callback([o] { run(*o); });
}

}  // namespace spire::cli
