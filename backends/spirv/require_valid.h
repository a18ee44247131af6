// The check compile() runs on every module it returns, separate so tests can feed it a broken module.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/kernel/kernel.h"

namespace spire::spirv {

// Throws CompileError "SPIR-V for kernel 'NAME' failed validation<stage> (a compiler bug): <validator
// message>\n<kir::print(k)>" unless `words` validate. `stage` is "" or e.g. " after spirv-opt".
void require_valid(const std::vector<uint32_t>& words, const kir::Kernel& k, const char* stage = "");

}  // namespace spire::spirv
