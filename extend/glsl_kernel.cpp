// GLSL -> SPIR-V through shaderc. Debian's shared libshaderc.so.1 crashes at compile time (built against another
// glslang), so CMake links the static libshaderc_combined (extend/CMakeLists.txt).
#include "extend/glsl_kernel.h"

#include <fmt/format.h>
#include <shaderc/shaderc.hpp>

#include <set>

namespace spire::ext {

namespace {

constexpr uint32_t kOpDecorate = 71, kOpExecutionMode = 16;
constexpr uint32_t kDecorationBinding = 33, kDecorationDescriptorSet = 34, kExecutionModeLocalSize = 17;

}  // namespace

GlslModule compile_glsl_kernel(const std::string& source, const std::string& file_name, uint32_t bindings,
                               const lowering::heavy::Config* config) {
  shaderc::Compiler compiler;
  shaderc::CompileOptions options;
  options.SetTargetEnvironment(shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
  options.SetOptimizationLevel(shaderc_optimization_level_performance);
  options.AddMacroDefinition("SPIRE_GROUP_ID",
                             "(gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z))");
  if (config)
    for (const auto& [name, value] : config->values())
      options.AddMacroDefinition("SPIRE_CONFIG_" + name, std::to_string(value));
  shaderc::SpvCompilationResult r =
      compiler.CompileGlslToSpv(source, shaderc_compute_shader, file_name.c_str(), options);
  if (r.GetCompilationStatus() != shaderc_compilation_status_success)
    throw graph::GraphError(fmt::format("GLSL kernel {} does not compile:\n{}", file_name, r.GetErrorMessage()));
  GlslModule m;
  m.words.assign(r.cbegin(), r.cend());

  // Walk the instructions for the interface the launch contract relies on.
  std::set<uint32_t> binding_numbers;
  bool other_set = false;
  for (size_t i = 5; i < m.words.size();) {
    const uint32_t count = m.words[i] >> 16, opcode = m.words[i] & 0xFFFF;
    if (count == 0 || i + count > m.words.size()) break;
    if (opcode == kOpDecorate && count >= 4 && m.words[i + 2] == kDecorationBinding) binding_numbers.insert(m.words[i + 3]);
    if (opcode == kOpDecorate && count >= 4 && m.words[i + 2] == kDecorationDescriptorSet && m.words[i + 3] != 0) other_set = true;
    if (opcode == kOpExecutionMode && count >= 6 && m.words[i + 2] == kExecutionModeLocalSize)
      m.workgroup_size = {m.words[i + 3], m.words[i + 4], m.words[i + 5]};
    i += count;
  }
  if (m.workgroup_size[0] == 0)
    throw graph::GraphError(fmt::format("GLSL kernel {}: no workgroup size; declare layout(local_size_x = N) in;", file_name));
  if (other_set) throw graph::GraphError(fmt::format("GLSL kernel {}: every buffer must be in descriptor set 0", file_name));
  for (uint32_t b : binding_numbers)
    if (b >= bindings)
      throw graph::GraphError(fmt::format("GLSL kernel {}: binding {} is beyond the op's {} buffers (its inputs at bindings "
                                          "0..{}, then the result at binding {})",
                                          file_name, b, bindings, bindings - 2, bindings - 1));
  if (!binding_numbers.count(bindings - 1))
    throw graph::GraphError(fmt::format("GLSL kernel {}: it never binds the result buffer (binding {})", file_name, bindings - 1));
  return m;
}

}  // namespace spire::ext
