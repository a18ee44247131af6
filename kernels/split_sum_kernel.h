// The second launch of a split-K kernel: `splits` workgroups shared each output's long sum and wrote one partial
// sum each, [splits][count]; this adds them in a fixed order (the same result on every run and device, with no
// atomics). Buffers: partial (read), out (write). Used by matmul (matmul_kernel.h) and conv2d's weight gradient.
//
// Many outputs (enough for two workgroups of 256 per core of a 132-core GPU, one output each) or fewer than 64 splits:
// each invocation adds its output's partials in split order. Fewer outputs over many splits (a convolution's few
// thousand weights over 256-512 splits): `parts` invocations share an output, part j adding splits j, j + parts, ... in order, and the workgroup then adds the parts
// in order; otherwise a handful of workgroups would each walk hundreds of partials (LeNet's second convolution at
// batch 8192 on the H100: 0.018 ms on vulkan:0 for 2400 weights over 512 splits).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/heavy_kernel.h"

namespace spire::lowering::heavy {

// Invocations that share an output: a power of two from 1 to min(32, splits); 1 for fewer than 64 splits.
uint32_t split_sum_parts(uint32_t count, uint32_t splits);

// first_count < count: outputs first_count .. count - 1 go to a second buffer, out_rest (at index e - first_count):
// one launch adds the partial sums of two results written side by side (a weight gradient and its bias gradient).
// Buffers: partial, out, then out_rest where there is one.
HeavyKernel split_sum_kernel(std::string name, kir::Type t, uint32_t count, uint32_t splits,
                             std::optional<uint32_t> first_count = std::nullopt);

}  // namespace spire::lowering::heavy
