// A launch that moves [batches][channels][positions] to [batches][positions][channels] (NCHW to NHWC for an image,
// [Cout][Cin][kh * kw] to [Cout][kh * kw][Cin] for convolution weights), elements of any type moved as they are
// stored. The channels-last tensor-core convolution (conv2d_mma_kernel.h) reads its operands so: 8 channels of one
// pixel are then 16 contiguous bytes, one asynchronous copy. 32 x 32 blocks through workgroup memory, so both the
// reads and the writes run along contiguous memory. Buffers: x (read), y (write).
#pragma once

#include <cstdint>

#include "kernels/heavy_kernel.h"

namespace spire::lowering::heavy {

// `depth` (at least `channels`): the channels of y's rows, those past `channels` zero (the channels-last convolution
// pads them to a multiple of 8); 0: `channels`. Throws std::invalid_argument when y has 2^32 elements or more.
HeavyKernel channels_last_kernel(kir::Type t, uint32_t batches, uint32_t channels, uint32_t positions,
                                 uint32_t depth = 0);

}  // namespace spire::lowering::heavy
