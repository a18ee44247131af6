// conv2d by Winograd's minimal filtering F(2x2, 3x3) and F(4x4, 3x3): 3x3 windows at stride 1 (no dilation, no
// groups) as 16 (36) independent products of 2.25x (4x) fewer multiplies than the implicit GEMM's
// (conv2d_gemm_kernels.h). Written below for F(2x2, 3x3); F(4x4, 3x3) is the same with 4x4 output tiles, 6x6 input
// patches and a 6x6 transformed domain (points 0, +-1, 1/2, -2 and infinity: the .cpp says why these).
//
// Each 2x2 block of outputs (a "tile") of one image and output channel is A^T [sum over ci of (G g G^T) .* (B^T d
// B)] A, where d is the 4x4 input patch under the tile, g the 3x3 window and .* the elementwise product. Written
// per element i of the 4x4 transformed domain, the sum over input channels is a matrix product:
//   M[i][co, tile] = U[i][co, ci] x V[i][ci, tile],   U = G g G^T (weights),   V = B^T d B (input patches).
// So a convolution is four launches: the weight transform (U, [16][Cout][Cin]), the input transform (V,
// [16][Cin][tiles]), one batched matmul of 16 (matmul_kernel.h, any of its SIMT tilings) into M [16][Cout][tiles],
// and the output transform (Y = A^T M A, scattered into NCHW). F(2x2, 3x3)'s constants are 0, +-1 and 1/2, exact in
// binary, so its result differs from the direct sum only by the order of roundings; F(4x4, 3x3)'s reach 8 and 1/24
// (not exact), which costs precision: a few times F(2x2, 3x3)'s error, still within the op's tolerance (both measured in
// tests/tuning/candidates_test.cpp and tests/kernels/conv2d_winograd_test.cpp).
//
// Where it pays: many channels and positions, where the product is the time (cuDNN's forward convolutions in resnet18
// reach more than the H100's fp32 peak in direct-sum terms by this); the transforms cost a few passes over the input
// and output. Tiles are 2x2 outputs in NCHW order (tile x fastest); a tile over the bottom or right edge reads zeros
// and stores only its outputs inside.
//
// The input gradient of a 3x3 stride-1 convolution is the same computation on grad_y with the weights turned by 180
// degrees and transposed (conv2d_winograd_grad_input_shape; the weight transform reads them so, `flipped`).
//
// Its weight gradient is the derivative of each tile's formula with respect to g, summed over the tiles:
//   grad_g = sum over tiles of G^T [(A gy A^T) .* (B^T d B)] G,
// with gy the tile's 2x2 block of grad_y (zeros past an odd edge). Per element i of the 4x4 domain the sum over tiles
// (of the whole batch) is again a matrix product, with K the tiles:
//   N[i][ci, co] = V[i][ci, tile] x Gy[i][tile, co],   V = B^T d B (the input transform above),   Gy = A gy A^T.
// So a weight gradient is four launches too: the input transform, the gradient transform (Gy, [16][tiles][Cout]), one
// batched matmul of 16, split over the tiles where its result is small (partial sums [splits][16][Cin][Cout]), and the
// transform back (grad_w = G^T N G, adding the splits in a fixed order). Same 2.25x fewer multiplies; cuDNN's weight
// gradients of resnet18's 3x3 layers run faster than the H100's fp32 peak in direct-sum terms by such an algorithm.
#pragma once

#include "kernels/conv2d_kernels.h"
#include "kernels/matmul_kernel.h"

namespace spire::lowering::heavy {

// Whether a convolution has the geometry F(2x2, 3x3) computes: a 3x3 window at stride 1, no dilation, no groups.
bool conv2d_winograd_applies(const Conv2dShape& s);

// The input gradient of such a convolution is itself one: grad_x = conv2d(grad_y, W') with W'[ci, co] the window of
// W[co, ci] turned by 180 degrees, padding 2 - p. Returns that forward convolution's shape (N, Cout -> Cin, Ho x Wo
// -> H x W); throws std::invalid_argument where conv2d_winograd_grad_input_applies(s) is false (s does not apply or its
// padding exceeds 2).
bool conv2d_winograd_grad_input_applies(const Conv2dShape& s);
Conv2dShape conv2d_winograd_grad_input_shape(const Conv2dShape& s);

// `tile` below is the output tile's side: 2 (F(2x2, 3x3)) or 4 (F(4x4, 3x3)); anything else throws
// std::invalid_argument. The transformed domain has (tile + 2)^2 planes: 16 or 36.
uint32_t conv2d_winograd_planes(uint32_t tile);

// The tiles (tile x tile output blocks) of the whole batch: N * ceil(Ho / tile) * ceil(Wo / tile).
int64_t conv2d_winograd_tiles(const Conv2dShape& s, uint32_t tile);

// The batched product: planes x [Cout, Cin] x [Cin, tiles].
MatmulShape conv2d_winograd_gemm_shape(const Conv2dShape& s, uint32_t tile);

// The weight gradient's batched product: planes x [Cin, tiles] x [tiles, Cout].
MatmulShape conv2d_winograd_grad_weight_gemm_shape(const Conv2dShape& s, uint32_t tile);

// The transforms, one invocation per element they produce; F(2x2, 3x3)'s kernels are named "conv2d_winograd_<stage>_...",
// F(4x4, 3x3)'s "conv2d_winograd4_<stage>_...". Each throws std::invalid_argument where the geometry does not apply
// or an index exceeds 32 bits. Buffers (16 planes written for F(2x2, 3x3), 36 for F(4x4, 3x3)):
//   weights: w (read, [Cout, Cin, 3, 3]; flipped: the original convolution's [Cin, Cout, 3, 3], each window read
//            turned by 180 degrees: W' of the input gradient), u (write, [16][Cout][Cin])
//   input:   x (read, NCHW), v (write, [16][Cin][tiles])
//   output:  m (read, [16][Cout][tiles]), y (write, NCHW)
HeavyKernel conv2d_winograd_weight_kernel(const Conv2dShape& s, kir::Type t, uint32_t tile, bool flipped = false);
HeavyKernel conv2d_winograd_input_kernel(const Conv2dShape& s, kir::Type t, uint32_t tile);
HeavyKernel conv2d_winograd_output_kernel(const Conv2dShape& s, kir::Type t, uint32_t tile);
// The weight gradient's two transforms (same rules):
//   grad_y:  gy (read, NCHW [N, Cout, Ho, Wo]), g (write, [16][tiles][Cout])
//   back:    n (read, the product's partial sums [splits][16][Cin][Cout]; [16][Cin][Cout] unsplit), grad_w (write,
//            [Cout, Cin, 3, 3])
HeavyKernel conv2d_winograd_grad_y_kernel(const Conv2dShape& s, kir::Type t, uint32_t tile);
HeavyKernel conv2d_winograd_grad_weight_kernel(const Conv2dShape& s, kir::Type t, uint32_t tile, uint32_t splits);

}  // namespace spire::lowering::heavy
