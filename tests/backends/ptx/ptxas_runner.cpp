#include "tests/backends/ptx/ptxas_runner.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace spire::ptx::testing {

namespace fs = std::filesystem;

std::optional<std::string> find_ptxas() {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      if (dir.empty()) continue;
      fs::path p = fs::path(dir) / "ptxas";
      if (::access(p.c_str(), X_OK) == 0) return p.string();
    }
  }
  if (::access("/usr/local/cuda/bin/ptxas", X_OK) == 0) return std::string("/usr/local/cuda/bin/ptxas");
  return std::nullopt;
}

AssembleResult assemble(const std::string& ptxas, const std::string& ptx, uint32_t sm) {
  AssembleResult r;
  std::string tmpl = (fs::temp_directory_path() / "spire_ptxas_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    r.log = "cannot create a temporary directory for ptxas";
    return r;
  }
  fs::path dir(tmpl);
  fs::path in = dir / "in.ptx", out = dir / "out.cubin", log = dir / "log.txt";
  std::ofstream(in) << ptx;
  // Architecture-specific PTX (.target sm_90a: wgmma) assembles only for that architecture.
  const bool specific = ptx.find(fmt::format(".target sm_{}a", sm)) != std::string::npos;
  std::string cmd = fmt::format("'{}' -arch=sm_{}{} '{}' -o '{}' > '{}' 2>&1", ptxas, sm, specific ? "a" : "", in.string(),
                                out.string(), log.string());
  int status = std::system(cmd.c_str());
  std::stringstream text;
  text << std::ifstream(log).rdbuf();
  r.ok = status == 0 && fs::exists(out) && fs::file_size(out) > 0;
  r.log = fmt::format("$ {}\n(exit status {})\n{}", cmd, status, text.str());
  std::error_code ec;
  fs::remove_all(dir, ec);
  return r;
}

}  // namespace spire::ptx::testing
