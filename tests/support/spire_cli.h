// CLI tests run the spire CLI as a user would: a command line in, its exit code and output back. The test
// target defines SPIRE_BINARY (the built spire) and, for the ONNX tests, MODELS_DIR.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace spire {

struct Result {
  int exit_code;
  std::string out;  // stdout and stderr together
};

// `env`: assignments put before the command ("LD_LIBRARY_PATH=/x"), for a run under another driver.
inline Result spire(const std::string& args, const std::string& env = "") {
  const std::string cmd = (env.empty() ? "" : env + " ") + std::string(SPIRE_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

#ifdef MODELS_DIR
inline std::string model(const std::string& name) { return std::string(MODELS_DIR) + "/" + name; }
#endif

}  // namespace spire
