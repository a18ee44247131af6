// The forward pass of a small convolution over many images (LeNet's second: 6 -> 16 channels, 5x5 window, 14x14
// outputs) through workgroup memory: Conv2dConfig::images.
//
// Each workgroup takes wg / ((cout / c_block) x ho) images. It first copies every weight and its images' input planes,
// zero-padded, into workgroup memory (loads issued before any store); then each invocation owns c_block output channels
// x one output row of one image, c_block x wo sums, accumulated over every input channel and window row from there: an
// input row (wo + kw - 1 values) and c_block x kw weights in registers serve c_block x kw x wo products, with constant
// offsets and no bounds checks. The row kernel (conv2d_kernels.h, rows) reads each input row from memory once per
// output-channel block and every weight once per row. Stride 1, dilation 1, one group, rows of at most 32 columns.
// Buffers: x (read), w (read), y (write), as conv2d_kernel's (epilogues fold into the stores the same way). The
// input gradient (below) is the same kernel.
#pragma once

#include "kernels/conv2d_kernels.h"

namespace spire::lowering::heavy {

// Invocations per image: (cout / c_block) x ho.
uint32_t conv2d_images_owners(const Conv2dShape& s, uint32_t c_block);
// Workgroup memory a workgroup takes, in elements: the weights, then each image's padded input planes.
uint64_t conv2d_images_elements(const Conv2dShape& s, uint32_t images);

// Throws std::invalid_argument naming what the shape or config lacks: stride 1, dilation 1, one group, rows of at most
// 32 columns, a c_block dividing the output channels with at most 64 sums per invocation, a workgroup of at least one
// image's invocations, the weights and images within the device's workgroup memory.
void check_conv2d_images(const Conv2dShape& s, kir::Type t, const Conv2dConfig& c, const Limits& limits);

// pool: also store that pooling of the result, maybe its positions, maybe instead of the result (pooled_side_output.h;
// conv2d_kernel checks that the config can).
HeavyKernel conv2d_images_kernel(const Conv2dShape& s, kir::Type t, const Conv2dConfig& c, const Limits& limits,
                                 const PooledOutputs* pool = nullptr);

// The input gradient the same way: for stride 1 it is the forward pass of grad_y (padded by kh - 1 - pad) with the
// weights transposed and their window turned around, which the workgroup stages so. c_block counts input channels.
// Buffers: grad_y (read), w (read), grad_x (write), as conv2d_grad_input_kernel's.
uint32_t conv2d_grad_input_images_owners(const Conv2dShape& s, uint32_t c_block);
void check_conv2d_grad_input_images(const Conv2dShape& s, kir::Type t, const Conv2dConfig& c, const Limits& limits);
HeavyKernel conv2d_grad_input_images_kernel(const Conv2dShape& s, kir::Type t, const Conv2dConfig& c,
                                            const Limits& limits);

}  // namespace spire::lowering::heavy
