// What both dump tests check of a dump folder: the numbered stage files, and every kernel's files, each
// module accepted by the external tools (spirv-val, ptxas) as well as by the backends' own checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace spire::dump_testing {

namespace fs = std::filesystem;

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A tool's path: on PATH, else in `fallback_dir`; "" when absent.
inline std::string find_tool(const std::string& name, const std::string& fallback_dir = "") {
  if (std::system(("command -v " + name + " > /dev/null 2>&1").c_str()) == 0) return name;
  if (!fallback_dir.empty() && fs::exists(fs::path(fallback_dir) / name)) return (fs::path(fallback_dir) / name).string();
  return "";
}

// Runs a command; returns "" on success, else the command and its output.
inline std::string run_tool(const std::string& cmd) {
  const std::string full = cmd + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  return pclose(p) == 0 ? "" : cmd + "\n" + out;
}

// The stage files exist and are non-empty; every kernel has .kir, .spv, .spvasm, .ptx and no .error; the plan
// names as many kernels as the folder holds. Returns the number of kernels.
inline size_t check_dump_folder(const fs::path& dir, bool joint) {
  for (const char* f : {"01-graph.txt", "03-decomposed.txt", "04-fused.txt", "05-plan.txt", "06-stats.txt"}) {
    EXPECT_TRUE(fs::exists(dir / f)) << f;
    if (fs::exists(dir / f)) {
      EXPECT_GT(fs::file_size(dir / f), 0u) << f;
    }
  }
  EXPECT_EQ(fs::exists(dir / "02-joint.txt"), joint);
  std::set<std::string> stems;
  for (const auto& e : fs::directory_iterator(dir / "kernels")) {
    EXPECT_NE(e.path().extension(), ".error") << slurp(e.path());
    EXPECT_GT(e.file_size(), 0u) << e.path();
    stems.insert(e.path().stem().string());
  }
  for (const std::string& s : stems)
    for (const char* ext : {".kir", ".spv", ".spvasm", ".ptx"})
      EXPECT_TRUE(fs::exists(dir / "kernels" / (s + ext))) << s << ext;
  const std::string plan = slurp(dir / "05-plan.txt");
  EXPECT_NE(plan.find(" " + std::to_string(stems.size()) + " kernels,"), std::string::npos)
      << stems.size() << " kernel files, plan:\n" << plan.substr(0, 600);
  return stems.size();
}

// spirv-val on every .spv, ptxas -arch=sm_90 on every .ptx. Skips (with the reason) when a tool is missing,
// after running the one that is present.
inline void check_modules_with_tools(const fs::path& dir) {
  const std::string spirv_val = find_tool("spirv-val");
  const std::string ptxas = find_tool("ptxas", "/usr/local/cuda/bin");
  size_t checked = 0;
  for (const auto& e : fs::directory_iterator(dir / "kernels")) {
    const std::string p = e.path().string();
    if (e.path().extension() == ".spv" && !spirv_val.empty()) {
      EXPECT_EQ(run_tool(spirv_val + " --target-env vulkan1.1 '" + p + "'"), "");
      ++checked;
    }
    if (e.path().extension() == ".ptx" && !ptxas.empty()) {
      EXPECT_EQ(run_tool(ptxas + " -arch=sm_90 '" + p + "' -o /dev/null"), "");
      ++checked;
    }
  }
  if (spirv_val.empty()) GTEST_SKIP() << "spirv-val is not installed (Debian: spirv-tools): the .spv files were not validated";
  if (ptxas.empty()) GTEST_SKIP() << "ptxas is not installed (/usr/local/cuda/bin): the .ptx files were not assembled";
  EXPECT_GT(checked, 0u);
}

}  // namespace spire::dump_testing
