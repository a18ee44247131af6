#include "backends/ptx/ptx_backend.h"

#include <fmt/format.h>

#include "backends/ptx/ptx_translator.h"

namespace spire::ptx {

std::string entry_name(const kir::Kernel& k) {
  std::string out;
  for (char c : k.name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
  return out;
}

std::string compile(const kir::Kernel& k, const Target& target) {
  if (k.prebuilt())
    throw CompileError(fmt::format("kernel '{}' exists only as a SPIR-V module (a GLSL kernel): it runs on Vulkan "
                                   "devices, not through PTX",
                                   k.name));
  return Translator(k, target).module();
}

}  // namespace spire::ptx
