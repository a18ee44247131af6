// For every kernel `spire kernel --list` names: `spire kernel K --target spirv -o k.spv` passes
// `spirv-val --target-env vulkan1.1`, and `spire kernel K --target ptx --arch sm_XX -o k.ptx` passes
// `ptxas -arch=sm_XX` for sm_75, sm_80 and sm_90. Also the command's errors and its --list and --print.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "examples/builtin_kernels.h"

namespace fs = std::filesystem;

namespace {

struct Result {
  int status;
  std::string output;
};

Result sh(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

Result spire(const std::string& args) { return sh(std::string(SPIRE_BINARY) + " " + args); }

std::string find_tool(const std::string& name, const std::string& fallback) {
  if (sh("command -v " + name).status == 0) return name;
  if (fs::exists(fallback)) return fallback;
  return {};
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / fmt::format("spire_cli_kernel_{}", getpid());
  fs::create_directories(d);
  return d;
}

TEST(SpireKernelCli, ListNamesEveryBuiltinKernel) {
  auto r = spire("kernel --list");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const auto& k : spire::examples::builtin_kernels()) EXPECT_NE(r.output.find(k.name), std::string::npos) << k.name;
}

TEST(SpireKernelCli, EveryKernelPassesSpirvVal) {
  std::string val = find_tool("spirv-val", "/usr/bin/spirv-val");
  ASSERT_FALSE(val.empty()) << "spirv-val not found (Debian package spirv-tools, installed by the test command)";
  fs::path dir = temp_dir();
  for (const auto& k : spire::examples::builtin_kernels()) {
    fs::path spv = dir / (k.name + ".spv");
    auto r = spire(fmt::format("kernel {} --target spirv -o {}", k.name, spv.string()));
    ASSERT_EQ(r.status, 0) << r.output;
    ASSERT_GT(fs::file_size(spv), 20u);
    auto v = sh(fmt::format("{} --target-env vulkan1.1 {}", val, spv.string()));
    EXPECT_EQ(v.status, 0) << k.name << ": " << v.output;
  }
}

TEST(SpireKernelCli, EveryKernelAssemblesWithPtxas) {
  std::string ptxas = find_tool("ptxas", "/usr/local/cuda/bin/ptxas");
  if (ptxas.empty()) GTEST_SKIP() << "ptxas not found (the CUDA toolkit is optional): PTX was not assembled";
  fs::path dir = temp_dir();
  for (const auto& k : spire::examples::builtin_kernels())
    for (const char* arch : {"sm_75", "sm_80", "sm_90"}) {
      fs::path ptx = dir / fmt::format("{}_{}.ptx", k.name, arch);
      auto r = spire(fmt::format("kernel {} --target ptx --arch {} -o {}", k.name, arch, ptx.string()));
      ASSERT_EQ(r.status, 0) << r.output;
      auto a = sh(fmt::format("{} -arch={} {} -o {}", ptxas, arch, ptx.string(), (dir / "k.cubin").string()));
      EXPECT_EQ(a.status, 0) << k.name << " " << arch << ": " << a.output;
    }
}

TEST(SpireKernelCli, PrintShowsTheKernelIr) {
  auto r = spire("kernel sum_reduce_pass --print");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("kernel sum_reduce_pass workgroup(256, 1, 1)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("barrier"), std::string::npos) << r.output;
}

TEST(SpireKernelCli, ErrorsNameTheProblem) {
  auto unknown = spire("kernel no_such_kernel --print");
  EXPECT_NE(unknown.status, 0);
  EXPECT_NE(unknown.output.find("no built-in kernel named 'no_such_kernel'"), std::string::npos) << unknown.output;
  auto target = spire("kernel relu --target metal -o /tmp/x");
  EXPECT_NE(target.status, 0);
  EXPECT_NE(target.output.find("expected spirv or ptx"), std::string::npos) << target.output;
  auto arch = spire("kernel relu --target ptx --arch sm_60 -o /tmp/x");
  EXPECT_NE(arch.status, 0);
  EXPECT_NE(arch.output.find("sm_XX with XX >= 75"), std::string::npos) << arch.output;
  auto out = spire("kernel relu --target spirv");
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.output.find("-o FILE"), std::string::npos) << out.output;
}

}  // namespace

namespace {

// SPIRE_VULKAN_PIPELINE_IR=<dir>: where the device offers VK_KHR_pipeline_executable_properties, every pipeline the
// examples create writes its driver's internal representations into <dir> and says how many (NVIDIA's 580 driver
// offers none: 0 each); where it does not (Debian 12's lavapipe), one note says that, nothing is written, and the
// examples still run.
TEST(SpireVulkanPipelineIr, WritesTheDriversRepresentationsOrSaysTheDeviceHasNone) {
  const fs::path dir = temp_dir() / "pipeline_ir";
  fs::remove_all(dir);
  const Result r = sh(fmt::format("SPIRE_VULKAN_PIPELINE_IR={} {} examples --device vulkan:0", dir.string(), SPIRE_BINARY));
  ASSERT_EQ(r.status, 0) << r.output;
  const bool offered = r.output.find("lacks VK_KHR_pipeline_executable_properties") == std::string::npos;
  size_t files = 0;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() && fs::file_size(e.path()) > 0;
  if (offered) {
    // "... pipeline '<kernel>': N internal representations written to <dir>", one line per pipeline.
    size_t said = 0, lines = 0;
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) {
      const size_t at = line.find(" internal representations written to ");
      if (at == std::string::npos) continue;
      ++lines;
      said += std::stoul(line.substr(line.rfind(' ', at - 1) + 1));
    }
    EXPECT_GT(lines, 0u) << r.output;
    EXPECT_EQ(files, said) << r.output;
  } else {
    EXPECT_EQ(files, 0u);
  }
}

}  // namespace
