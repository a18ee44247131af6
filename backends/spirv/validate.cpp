// validate(): the SPIRV-Tools validator in the Vulkan 1.1 environment (the devices' baseline).
#include <spirv-tools/libspirv.hpp>

#include <string>

#include "backends/spirv/spirv_backend.h"

namespace spire::spirv {

std::string validate(const std::vector<uint32_t>& words) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& position, const char* text) {
    if (!messages.empty()) messages += '\n';
    messages += "word " + std::to_string(position.index) + ": " + text;
  });
  if (tools.Validate(words)) return "";
  return messages.empty() ? std::string("invalid module (the validator gave no message)") : messages;
}

}  // namespace spire::spirv
