// ir/kernel -> SPIR-V words for Vulkan compute, validated with SPIRV-Tools before they leave the backend.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/kernel/kernel.h"

namespace spire::spirv {

// A module that fails validation is a compiler bug: the message holds the validator's words and the
// kernel's text (ir/kernel/printer.h).
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  // SPIR-V 1.3 / Vulkan 1.1 is the baseline every Vulkan compute device takes.
  bool validate = true;
};

// Interface contract with runtime/vulkan:
//  * entry point "main", GLCompute, LocalSize = kernel.workgroup_size;
//  * buffer parameter i -> descriptor set 0, binding i, a storage buffer holding a runtime array of its
//    element type (Block-decorated struct, ArrayStride = element size);
//  * scalars -> one push-constant block laid out per kir::Kernel::scalar_offsets();
//  * linear builtins rebuilt from WorkgroupId/NumWorkgroups (x fastest) so a folded 2D/3D grid works.
std::vector<uint32_t> compile(const kir::Kernel& k, const Options& opt = {});

// Runs the SPIRV-Tools validator (Vulkan 1.1 environment); returns "" when valid, else its message.
std::string validate(const std::vector<uint32_t>& words);

}  // namespace spire::spirv
