// spirv-opt's performance passes on an emitted module (Options::optimize).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spire::spirv {

// Throws CompileError naming `kernel_name` and the optimizer's messages when spirv-opt fails.
std::vector<uint32_t> optimize_module(const std::vector<uint32_t>& words, const std::string& kernel_name);

}  // namespace spire::spirv
