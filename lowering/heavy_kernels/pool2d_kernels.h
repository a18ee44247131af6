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
//  * avg_pool2d_grad_kernel: one invocation per input element summing grad/(kh*kw) over the windows that
//    contain it. Buffers: grad_y (read), grad_x (write).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lowering/heavy_kernels/heavy_kernel.h"

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

HeavyKernel max_pool2d_kernel(const Pool2dShape& s, kir::Type t);
HeavyKernel max_pool2d_grad_kernel(const Pool2dShape& s, kir::Type t);
HeavyKernel avg_pool2d_kernel(const Pool2dShape& s, kir::Type t);
HeavyKernel avg_pool2d_grad_kernel(const Pool2dShape& s, kir::Type t);

}  // namespace spire::lowering::heavy
