// The second launch of a split-K kernel: `splits` workgroups shared each output's long sum and wrote one partial
// sum each, [splits][count]; this adds them in split order (the same result on every run and device, with no
// atomics). Buffers: partial (read), out (write). Used by matmul (matmul_kernel.h) and conv2d's weight gradient.
#pragma once

#include <cstdint>
#include <string>

#include "lowering/heavy_kernels/heavy_kernel.h"

namespace spire::lowering::heavy {

HeavyKernel split_sum_kernel(std::string name, kir::Type t, uint32_t count, uint32_t splits);

}  // namespace spire::lowering::heavy
