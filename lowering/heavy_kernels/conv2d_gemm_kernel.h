// conv2d as an implicit GEMM: Y[co, (n, ho, wo)] = W[co, (ci, kh, kw)] x X'[(ci, kh, kw), (n, ho, wo)], where X'
// is the im2col matrix of the input, never built: the tiled GEMM body (tiled_gemm.h) gathers each of its
// elements from the NCHW input as it stages a slice, zero where the window hangs over the padding, and
// scatters each result to its NCHW place. Weights are already the row-major [Cout, Cin*kh*kw] matrix.
//
// Where it pays: many output channels and positions (batches of images), where the direct kernels
// (conv2d_kernels.h) re-read every input element once per output channel from memory, and the GEMM reuses it
// from workgroup memory across a whole block of channels. The direct kernels stay for grouped convolutions
// and small problems. Buffers, as conv2d_kernel's: x (read), w (read), y (write).
#pragma once

#include "lowering/heavy_kernels/conv2d_kernels.h"
#include "lowering/heavy_kernels/matmul_kernel.h"

namespace spire::lowering::heavy {

// The GEMM a convolution is: M = Cout, K = Cin * kh * kw, N = batch * Ho * Wo (no batch dimensions).
MatmulShape conv2d_gemm_shape(const Conv2dShape& s);

// Throws std::invalid_argument for a grouped convolution or an inconsistent tiling.
HeavyKernel conv2d_gemm_kernel(const Conv2dShape& s, kir::Type t, const MatmulTiling& tiling);

}  // namespace spire::lowering::heavy
