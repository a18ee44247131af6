// disassemble(): spirv-dis text, for people reading what the backend produced.
#include <spirv-tools/libspirv.hpp>

#include <stdexcept>

#include "backends/spirv/spirv_backend.h"

namespace spire::spirv {

std::string disassemble(const std::vector<uint32_t>& words) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* text) {
    if (!messages.empty()) messages += '\n';
    messages += text;
  });
  std::string text;
  if (!tools.Disassemble(words, &text, SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT))
    throw std::invalid_argument("cannot disassemble: not a SPIR-V module: " + messages);
  return text;
}

}  // namespace spire::spirv
