// A launch that widens `count` f16 or bf16 elements to f32, one invocation per element. Used where a heavy op reads an
// operand whose cast up fusion absorbed (fuse.h) but the chosen kernel reads f32 only (a half convolution on a device
// without tensor cores): the program widens the operand into scratch first, as the cast's own launch did before.
// Buffers: x (read, half), y (write, f32).
#pragma once

#include <cstdint>

#include "kernels/heavy_kernel.h"

namespace spire::lowering::heavy {

HeavyKernel widen_kernel(kir::Type half, uint32_t count);

}  // namespace spire::lowering::heavy
