// spire kernel: list, print and compile the built-in kernels, so anyone can check the generated code with
// spirv-val, spirv-dis or ptxas.
#include <fstream>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "backends/ptx/ptx_backend.h"
#include "backends/spirv/spirv_backend.h"
#include "examples/builtin_kernels.h"
#include "ir/kernel/printer.h"
#include "tools/spire/commands.h"

namespace spire::cli {

namespace {

struct KernelOptions {
  bool list = false;
  bool print = false;
  std::string name;
  std::string target;
  std::string arch = "sm_75";
  std::string output;
};

uint32_t parse_arch(const std::string& arch) {
  unsigned sm = 0;
  if (arch.rfind("sm_", 0) != 0 || std::sscanf(arch.c_str() + 3, "%u", &sm) != 1 || sm < 75)
    throw std::invalid_argument(fmt::format("--arch '{}': expected sm_XX with XX >= 75 (e.g. sm_75, sm_80, sm_90)", arch));
  return sm;
}

void write_file(const std::string& path, const void* data, size_t bytes) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open '" + path + "' for writing");
  f.write(static_cast<const char*>(data), std::streamsize(bytes));
  if (!f) throw std::runtime_error("failed writing '" + path + "'");
}

void run(const KernelOptions& o) {
  if (o.list) {
    for (const auto& k : examples::builtin_kernels()) fmt::print("{:<18} {}\n", k.name, k.description);
    return;
  }
  if (o.name.empty()) throw std::invalid_argument("name a kernel (spire kernel --list shows them)");
  const auto* bk = examples::find_builtin_kernel(o.name);
  if (!bk) throw std::invalid_argument(fmt::format("no built-in kernel named '{}' (spire kernel --list shows them)", o.name));
  kir::Kernel k = bk->build();
  if (o.print) fmt::print("{}", kir::print(k));
  if (o.target.empty()) {
    if (!o.print) throw std::invalid_argument("give --print or --target spirv|ptx -o FILE");
    return;
  }
  if (o.output.empty()) throw std::invalid_argument("--target needs -o FILE");
  if (o.target == "spirv") {
    auto words = spirv::compile(k);
    write_file(o.output, words.data(), words.size() * 4);
  } else if (o.target == "ptx") {
    auto text = ptx::compile(k, ptx::Target{parse_arch(o.arch)});
    write_file(o.output, text.data(), text.size());
  } else {
    throw std::invalid_argument(fmt::format("--target '{}': expected spirv or ptx", o.target));
  }
}

}  // namespace

void register_kernel_commands(CLI::App& app) {
  auto o = std::make_shared<KernelOptions>();
  auto* cmd = app.add_subcommand("kernel", "List, print or compile the built-in kernels");
  cmd->add_flag("--list", o->list, "Name the built-in kernels");
  cmd->add_option("name", o->name, "Built-in kernel to print or compile");
  cmd->add_flag("--print", o->print, "Show the kernel's IR as text");
  cmd->add_option("--target", o->target, "Compile to 'spirv' (a SPIR-V binary, validated) or 'ptx' (PTX text)");
  cmd->add_option("--arch", o->arch, "PTX target architecture (default sm_75, the offline baseline)");
  cmd->add_option("-o,--output", o->output, "Output file for --target");
  cmd->callback([o] { run(*o); });
}

}  // namespace spire::cli
