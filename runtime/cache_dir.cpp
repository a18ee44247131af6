#include "runtime/cache_dir.h"

#include <cstdlib>
#include <cstring>

namespace spire::rt {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

}  // namespace

std::filesystem::path cache_dir() {
  namespace fs = std::filesystem;
  if (const char* dir = env("SPIRE_CACHE_DIR")) return fs::path(dir);
  if (const char* xdg = env("XDG_CACHE_HOME")) return fs::path(xdg) / "spire";
  if (const char* home = env("HOME")) return fs::path(home) / ".cache" / "spire";
  return {};
}

bool disk_cache_disabled() {
  const char* v = env("SPIRE_NO_DISK_CACHE");
  return v && std::strcmp(v, "1") == 0;
}

}  // namespace spire::rt
