#include "tests/backends/spirv/spirv_test_util.h"

#include <spirv-tools/libspirv.hpp>

#include <regex>
#include <sstream>
#include <stdexcept>

#include "backends/spirv/spirv_backend.h"

namespace spire::spirv::test {

std::string disassemble(const std::vector<uint32_t>& words) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::string text;
  if (!tools.Disassemble(words, &text, SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_NO_HEADER))
    throw std::runtime_error("spirv-dis failed on the module");
  return text;
}

std::string compile_to_text(const kir::Kernel& k) { return disassemble(compile(k)); }

int count_lines(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, re)) ++n;
  return n;
}

bool has_line(const std::string& text, const std::string& pattern) { return count_lines(text, pattern) > 0; }

}  // namespace spire::spirv::test
