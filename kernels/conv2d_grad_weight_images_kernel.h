// The weight gradient of a small convolution over many images (LeNet's second: 6 -> 16 channels, 5x5 window, 14x14
// outputs) with every weight in one workgroup: GradWeightConfig::all_pairs.
//
// Each workgroup takes a split of the batch's images, one image per step: it copies the image's grad_y planes (every
// output channel) and input planes (every input channel, zero-padded) into workgroup memory, all loads issued before
// any store, and then each invocation owns co_block output channels x one input channel x one window row, co_block x kw
// sums, which it accumulates sliding along the image's output rows in workgroup memory: an output row (wo values) and
// an input row (wo + kw - 1 values) in registers serve co_block x kw x wo products. Every image is read from memory
// once per split (the row kernels of conv2d_kernels.h read it once per (output-channel block, input channel) pair),
// and as no two invocations share a sum, there is no reduction: each writes its sums to its split's partials.
// Where few invocations own sums (LeNet's first convolution: 6 output channels x 5 window rows), row_split gives each
// owner's output rows to that many invocations (row r to invocation r % row_split), and workgroup memory adds their
// sums at the end. The staged planes' rows are padded so that a subgroup reading rows of several owners or row
// groups reads distinct banks. Stride 1, dilation 1, one group, rows of at most 32 columns. Buffers: grad_y (read), x (read), grad_w or
// partial_grad_w (write), as conv2d_grad_weight_kernel's.
#pragma once

#include "kernels/conv2d_kernels.h"
#include "kernels/pool2d_kernels.h"

namespace spire::lowering::heavy {

// Invocations that own sums: (cout / co_block) x cin x kh (each of them row_split invocations with row_split).
uint32_t grad_weight_images_owners(const Conv2dShape& s, uint32_t co_block);
// Workgroup memory the config takes, in elements: the staged image (grad_y planes, then the padded input planes, rows
// padded against bank conflicts), or the row groups' sums where those take more.
uint64_t grad_weight_images_elements(const Conv2dShape& s, const GradWeightConfig& c);

// Throws std::invalid_argument naming what the shape or config lacks: stride 1, dilation 1, one group, rows of at
// most 32, co_block dividing the output channels with co_block x kw <= 64 sums, a row_split of 1..ho, a workgroup of
// at least the owners times row_split (a power of two without row_split), splits 1..512 and at most the images, and the staged image within the device's workgroup memory.
void check_grad_weight_images(const Conv2dShape& s, kir::Type t, const GradWeightConfig& c, const Limits& limits);

// grad_y as a max pooling's gradient, maybe under a ReLU's mask (fuse.h's gathered prologues): the kernel reads the
// pooled gradient and the pooling's input instead and fills its staged copy of grad_y window by window
// (pool2d_kernels.h's max_pool2d_window_grads), so the pooling gradient is never stored. Buffers then: pooled_grad_y
// (read), x (read), grad_w or partial_grad_w (write), pool_input (read).
// With positions (passes/pool_grad_by_argmax.h's form), the pooling's input is replaced by its windows' positions
// (max_pool2d_argmax, i32) and, under the mask, the pooled values: buffers pooled_grad_y, x, grad_w or partial_grad_w,
// positions (i32, read), then pooled (read) with relu_mask.
// bias_sums (with positions): the launch also adds grad_y over images and positions per output channel, the layer's
// bias gradient (fuse.h's side outputs), from the masked pooled gradient it stages anyway: each invocation keeps a sum
// per staging round (its windows of a round are always of one channel), which workgroup memory adds per channel at
// the end. Its results: a last buffer grad_b [Cout] with one split; else each split's partials follow its weights'
// in partial_grad_w, [splits][weights + Cout], for split_sum_kernel's two outputs.
struct PooledGradOut {
  Pool2dShape pool;  // over grad_y's shape [N, Cout, Ho, Wo], windows that tile it
  bool relu_mask = false;
  bool positions = false;
  bool bias_sums = false;
};

HeavyKernel conv2d_grad_weight_images_kernel(const Conv2dShape& s, kir::Type t, const GradWeightConfig& c,
                                             const Limits& limits, const PooledGradOut* pooled = nullptr);

}  // namespace spire::lowering::heavy
