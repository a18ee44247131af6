#include "backends/spirv/optimize.h"

#include <spirv-tools/optimizer.hpp>

#include "backends/spirv/spirv_backend.h"

namespace spire::spirv {

std::vector<uint32_t> optimize_module(const std::vector<uint32_t>& words, const std::string& kernel_name) {
  spvtools::Optimizer optimizer(SPV_ENV_VULKAN_1_1);
  std::string messages;
  optimizer.SetMessageConsumer([&](spv_message_level_t level, const char*, const spv_position_t&, const char* text) {
    if (level > SPV_MSG_WARNING) return;  // errors and worse only
    if (!messages.empty()) messages += '\n';
    messages += text;
  });
  optimizer.RegisterPerformancePasses();
  std::vector<uint32_t> optimized;
  // The caller validates the result itself; spirv-opt's own pre-check would only repeat that work.
  spvtools::ValidatorOptions validator_options;
  spvtools::OptimizerOptions options;
  options.set_run_validator(false);
  options.set_validator_options(validator_options);
  if (!optimizer.Run(words.data(), words.size(), &optimized, options))
    throw CompileError("spirv-opt failed on kernel '" + kernel_name + "': " +
                       (messages.empty() ? std::string("no message") : messages));
  return optimized;
}

}  // namespace spire::spirv
