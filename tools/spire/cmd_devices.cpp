// spire devices: every device of every backend, with the limits kernels are compiled against.
#include <fmt/format.h>

#include "runtime/device.h"
#include "tools/spire/commands.h"

namespace spire::cli {

namespace {

std::string mib(uint64_t bytes) { return fmt::format("{} MiB", bytes >> 20); }

void list() {
  auto devices = rt::list_devices();
  if (devices.empty()) {
    fmt::print("no compute devices found (install mesa-vulkan-drivers for lavapipe, the CPU Vulkan device)\n");
    return;
  }
  for (const auto& d : devices) {
    fmt::print("{}  {}\n", d.id, d.name);
    fmt::print("    vendor {}, driver {}, type {}\n", d.vendor, d.driver, rt::device_type_name(d.type));
    fmt::print("    subgroup {}, shared memory {} KiB, workgroup <= {} invocations ({} x {} x {})\n", d.subgroup_size,
               d.shared_memory_bytes / 1024, d.max_workgroup_invocations, d.max_workgroup_size[0],
               d.max_workgroup_size[1], d.max_workgroup_size[2]);
    fmt::print("    workgroup count <= {} x {} x {}, buffer binding <= {}, <= {} buffers per kernel, memory {}\n",
               d.max_workgroup_count[0], d.max_workgroup_count[1], d.max_workgroup_count[2], mib(d.max_buffer_bytes),
               d.max_kernel_buffers, mib(d.memory_bytes));
    fmt::print("    features: {}{}\n", features_to_string(d.features),
               d.compute_capability ? fmt::format(", compute capability sm_{}", d.compute_capability) : "");
  }
}

}  // namespace

void register_device_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "List compute devices (vulkan:N, cuda:N) with vendor, driver, type and limits");
  cmd->callback(list);
}

}  // namespace spire::cli
