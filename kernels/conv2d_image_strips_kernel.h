// The forward pass of a convolution with few output channels over many images (LeNet's first: 1 -> 6 channels, 5x5
// window, 28x28 outputs) through workgroup memory: Conv2dConfig::images with rows = 0, c_block = every output channel.
//
// Each workgroup copies every weight ([cin][kh][kw][output channels in fours], as the shared_w elements keep them) and
// wg / owners images' input planes, zero-padded, into workgroup memory. Each invocation then owns a vertical strip of
// `pixels` output elements of one column, of every output channel (cout x pixels sums): per input channel and window
// column, a column of pixels + kh - 1 input values in registers serves every channel's kh x pixels products, four
// channels' weights per read. Against the shared_w elements, which load every input value of every window from memory
// (25 loads for 150 products per element on LeNet's first layer), an input value here is read pixels + kh - 1 times
// per kh x pixels products. Neighbouring invocations own neighbouring columns, so the subgroup's workgroup-memory
// reads and the output's stores are contiguous; the staged rows' stride is chosen so that a subgroup spanning two
// strips still reads distinct banks. Stride 1, dilation 1, one group. Buffers: x (read), w (read), y (write), as
// conv2d_kernel's (epilogues fold into the stores the same way).
#pragma once

#include "kernels/conv2d_kernels.h"

namespace spire::lowering::heavy {

// Invocations per image: ceil(ho / pixels) strips x wo columns.
uint32_t conv2d_image_strips_owners(const Conv2dShape& s, uint32_t pixels);
// Workgroup memory a workgroup of `c` takes, in elements: the weights, then its images' padded input planes.
uint64_t conv2d_image_strips_elements(const Conv2dShape& s, const Conv2dConfig& c);

// Throws std::invalid_argument naming what the shape or config lacks: stride 1, dilation 1, one group, c_block =
// every output channel, at most 64 sums per invocation, a workgroup of at least one image's invocations, the weights
// and images within the device's workgroup memory.
void check_conv2d_image_strips(const Conv2dShape& s, kir::Type t, const Conv2dConfig& c, const Limits& limits);

// pool: also store that pooling of the result, maybe its positions, maybe instead of the result (pooled_side_output.h;
// conv2d_kernel checks that the config can).
HeavyKernel conv2d_image_strips_kernel(const Conv2dShape& s, kir::Type t, const Conv2dConfig& c, const Limits& limits,
                                       const PooledOutputs* pool = nullptr);

}  // namespace spire::lowering::heavy
