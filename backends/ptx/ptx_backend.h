// ir/kernel -> PTX text for the CUDA driver's JIT.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "ir/kernel/kernel.h"

namespace spire::ptx {

class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Target {
  uint32_t sm = 75;  // compute capability as major*10+minor; sm_75 when compiling offline
};

// The lowest PTX ISA version that supports .target sm_XX, so older drivers can JIT it (7.8 for sm_90).
std::string ptx_version_for(uint32_t sm);

// Interface contract with runtime/cuda:
//  * one .visible .entry named after the kernel;
//  * parameters in order: one .u64 global pointer per buffer, then each scalar as its own .param of its
//    type (kir::Kernel::scalars order);
//  * linear builtins rebuilt from %ctaid/%nctaid (x fastest) so a folded grid works;
//  * .reqntid = kernel.workgroup_size.
std::string compile(const kir::Kernel& k, const Target& target = {});

}  // namespace spire::ptx
