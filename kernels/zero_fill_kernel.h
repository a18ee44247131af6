// A launch that sets `count` elements of one buffer to zero, one invocation per element: consecutive invocations
// store consecutive elements, so every warp's store is whole sectors. Used before a kernel that writes only some of
// its result's elements (conv2d_gemm_kernels.h: a strided input gradient whose windows leave elements no tap reaches).
// A kernel, not rt::CommandStream::fill: a tunable node's program is kernel launches (tunable.h's KernelProgram), which
// plans, dumps and bundles record and replay as they are. Buffers: out (write).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/heavy_kernel.h"

namespace spire::lowering::heavy {

HeavyKernel zero_fill_kernel(std::string name, kir::Type t, uint32_t count);

}  // namespace spire::lowering::heavy
