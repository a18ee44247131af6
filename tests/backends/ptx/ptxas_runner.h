// Runs NVIDIA's ptxas on generated PTX, so every module the backend emits is checked by the assembler that
// the driver's JIT shares its front end with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace spire::ptx::testing {

// ptxas on PATH, else /usr/local/cuda/bin/ptxas; nullopt when neither exists.
std::optional<std::string> find_ptxas();

struct AssembleResult {
  bool ok = false;
  std::string log;  // ptxas's stdout and stderr, and the command line
};

// Writes the PTX to a fresh temporary directory and runs `ptxas -arch=sm_XX in.ptx -o out.cubin`.
AssembleResult assemble(const std::string& ptxas, const std::string& ptx, uint32_t sm);

}  // namespace spire::ptx::testing
