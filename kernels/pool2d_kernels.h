// 2D max and average pooling over NCHW tensors (floor mode) and their gradients. Deterministic: no atomics.
//
//  * max_pool2d_kernel / avg_pool2d_kernel: one invocation per output. Padded positions never win a max
//    and count in the average's divisor (kh*kw always: PyTorch's count_include_pad=True; in floor mode every
//    window lies inside the padded input). Buffers: x (read), y (write).
//  * max_pool2d_grad_kernel: one invocation per INPUT element; for every window containing it, it recomputes
//    the window's argmax and takes the window's gradient only if it is the window's FIRST maximal element in
//    row-major window order (PyTorch's rule); where the windows tile the input exactly (stride = window, no
//    padding, nothing left over), one invocation per window instead, writing the whole window once. Buffers: grad_y
//    (read), x (read), grad_x (write).
//  * max_pool2d_argmax_kernel / max_pool2d_grad_argmax_kernel: the same, the windows' maxima kept as their positions
//    in the window (graph.h's max_pool2d_argmax): the gradient reads a position per window instead of the input.
//  * avg_pool2d_grad_kernel: one invocation per input element summing grad/(kh*kw) over the windows that
//    contain it. Buffers: grad_y (read), grad_x (write).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/heavy_kernel.h"

namespace spire::lowering::heavy {

struct Pool2dShape {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input [N, C, H, W]
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t ho = 0, wo = 0;              // output [N, C, Ho, Wo]

  // "n8_c6_h28_w28_k2x2_s2x2_p0x0": what kernel names carry.
  std::string text() const;
};

// Validates (rank 4, padding at most half the kernel, window fits) and computes Ho, Wo; throws
// std::invalid_argument naming the problem. kernel, stride and padding are (height, width) pairs.
Pool2dShape pool2d_shape(const std::vector<int64_t>& x, const std::vector<int64_t>& kernel,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding);

// True when the windows tile the input exactly (stride = window, no padding, no rows or columns left over: LeNet's
// 2x2 pools): each input element lies in one window.
bool pool2d_windows_tile(const Pool2dShape& s);

// The gradient at each element of one window (row-major), for windows that tile the input: the window's gradient
// `g` at its first maximal element and 0 elsewhere (max_pool2d_grad_kernel's rule); with relu_mask, also 0 unless
// that maximum is > 0 (then it is relu_grad(max_pool2d_grad(g, x), x), x being a ReLU's output). x_at loads the
// pooled input at an element index of its [N, C, H, W]; plane_base is the window's plane's first element, (h0, w0)
// its top-left corner. Staged kernels fill their copy of a pooling gradient window by window with it
// (conv2d_grad_weight_images_kernel.h's PooledGradOut).
std::vector<kir::Val> max_pool2d_window_grads(kir::KernelBuilder& kb, const Pool2dShape& s,
                                              const std::function<kir::Val(kir::Val)>& x_at, kir::Val plane_base,
                                              kir::Val h0, kir::Val w0, kir::Val g, kir::Type t, bool relu_mask);

// Whether element value v takes a window's maximum from `best`, the larger so far: v is larger, or v is a NaN
// (PyTorch's rule: a window holding a NaN pools to NaN). Ties keep the earlier element.
kir::Val takes_window_max(kir::Val v, kir::Val best);

// with_argmax: also each window's position (max_pool2d_argmax), into a third buffer, "argmax" (i32, write).
HeavyKernel max_pool2d_kernel(const Pool2dShape& s, kir::Type t, bool with_argmax = false);
// The positions alone. Buffers: x (read), argmax (i32, write).
HeavyKernel max_pool2d_argmax_kernel(const Pool2dShape& s, kir::Type t);
// max_pool2d_grad from the windows' positions. Buffers: grad_y (read), argmax (i32, read), grad_x (write). relu_mask:
// also a fourth, "pooled" (read, the pooled values): each window's gradient passes only where its maximum is > 0
// (passes/pool_grad_by_argmax.h's mask, for a fused gradient's fallback); only where the windows tile the input.
// sum_chunks (windows that tile the input; max_pool2d_grad_sum_chunks(s) of them): also the sum of the gradients it
// reads (grad_y, through the mask or a fused prologue) per chunk of images and channel, a last buffer partial_sums
// [chunks][C] (write) that split_sum_kernel adds: the bias gradient of the convolution under the pooling (fuse.h's
// side outputs). One workgroup per (channel, chunk) then, instead of one invocation per window, each invocation a few
// rounds of windows; loads_first: all rounds' loads before any store (faster through ptxas; lower_pool2d.cpp).
HeavyKernel max_pool2d_grad_argmax_kernel(const Pool2dShape& s, kir::Type t, bool relu_mask = false,
                                          uint32_t sum_chunks = 0, bool loads_first = false);
uint32_t max_pool2d_grad_sum_chunks(const Pool2dShape& s);
// A pooled gradient [N, C, ho, wo] summed over images and windows per channel, in a fixed order (one workgroup a
// channel): the bias gradient of the convolution under the pooling, which is the sum of the pooling gradient. Buffers:
// grad (read), then with relu_mask "pooled" (read: each term passes only where its pooled value is > 0, relu_masked),
// sums [C] (write). The pooled weight gradient's configs that do not stage windows launch it (lower_conv2d.cpp).
HeavyKernel pooled_channel_sums_kernel(const Pool2dShape& s, kir::Type t, bool relu_mask);

// The gradient at each element of one window (row-major), from the window's position of its maximum (i32): g there and
// 0 elsewhere. relu_masked: g, or 0 where the pooled value is <= 0 (a NaN passes g, as relu_grad's mask).
std::vector<kir::Val> max_pool2d_window_grads_at(kir::KernelBuilder& kb, const Pool2dShape& s, kir::Val position,
                                                 kir::Val g, kir::Type t);
kir::Val relu_masked(kir::KernelBuilder& kb, kir::Val g, kir::Val pooled, kir::Type t);
// relu_mask: relu_grad(max_pool2d_grad(grad_y, x), x), the mask of a ReLU whose output x is (as a fused
// gradient's fallback computes it, lower_conv2d.cpp); only where the windows tile the input (else
// std::invalid_argument), the only pooling such a gradient is fused for.
HeavyKernel max_pool2d_grad_kernel(const Pool2dShape& s, kir::Type t, bool relu_mask = false);
HeavyKernel avg_pool2d_kernel(const Pool2dShape& s, kir::Type t);
HeavyKernel avg_pool2d_grad_kernel(const Pool2dShape& s, kir::Type t);

}  // namespace spire::lowering::heavy
