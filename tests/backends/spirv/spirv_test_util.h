// Helpers for the SPIR-V backend tests: compile + disassemble, and searching the disassembly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/kernel/kernel.h"

namespace spire::spirv::test {

// spirv-dis text with friendly names (%float, %uint_0, %x, ...), one instruction per line.
std::string disassemble(const std::vector<uint32_t>& words);

// compile() (which validates) and disassemble.
std::string compile_to_text(const kir::Kernel& k);

// Lines of `text` that match the ECMAScript regex `pattern` (searched within each line).
int count_lines(const std::string& text, const std::string& pattern);
bool has_line(const std::string& text, const std::string& pattern);

}  // namespace spire::spirv::test
