// The one place the suite looks behind the contract: which driver object a loaded kernel runs, so a test can
// tell "loading the same binary again reused it" from "it was loaded twice" on every backend.
#pragma once

#include "runtime/device.h"

namespace spire::rt::conformance {

// The Vulkan pipeline or the CUDA function a loaded kernel launches; equal for kernels that share it.
const void* loaded_program(const Kernel& k);

}  // namespace spire::rt::conformance
