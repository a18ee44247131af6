// conv2d on tensor cores: the implicit GEMM of conv2d_gemm_kernels.h, Y[co, (n, ho, wo)] = W[co, (ci, kh, kw)] x
// X'[(ci, kh, kw), (n, ho, wo)], with the input and the weights stored as f16 (or both as bf16) and read in place,
// f32 products and sums (products of 16-bit values are exact in f32, as PyTorch's half convolutions compute them).
// It is the tensor-core matmul's body (matmul_mma_kernel.h): the weights, a row-major [Cout, Cin * kh * kw] matrix,
// are its A (16-byte copies where those rows start on 16 bytes); X', the im2col matrix of the NCHW input, is its B,
// gathered element by element as each slice is staged and never built (zero where a window hangs over the padding);
// each result is scattered to its NCHW place, so epilogues (a bias, an activation, the rounding to half) fuse into
// those stores. Ungrouped convolutions (any stride, padding, dilation). Needs Feature::CooperativeMatrix.
//
// Channels last: the kernel reads an NHWC copy of the input and a [Cout, kh, kw, Cin] copy of the weights
// (channels_last_kernel.h makes them), their channels padded with zeros to a multiple of 8, so K runs (kh, kw, ci) and
// 8 consecutive k of one column are 16 contiguous bytes of one input pixel: B is staged like A, by 16-byte copies
// (zeros over the padding), and the two operands' copies pipeline as the matmul's do, instead of one element, its
// divisions and its branch at a time.
// A 1x1 window at stride 1 without padding, over images whose positions come in whole 16-byte pieces
// (conv2d_copies_input_rows), reads the NCHW input as stored by 16-byte copies too: each piece of a slice of X' is 8
// consecutive positions (4 in f32) of one channel of one image, so both operands pipeline as the matmul's do.
// TF32 (the tf32 precision policy): `half` F32 names f32 operands that the same kernel stages as f32 and multiplies as
// TF32 on PTX's tensor cores (matmul_mma_kernel.h).
// Buffers: x (read, half), w (read, half), y (write, f32).
#pragma once

#include <vector>

#include "kernels/conv2d_kernels.h"
#include "kernels/matmul_mma_kernel.h"

namespace spire::lowering::heavy {

// The product the kernel computes (conv2d_gemm_shape: M = Cout, K = Cin * kh * kw, N = batch * Ho * Wo), its operands
// `half`; channels last, B is read [column][k] (b_transposed) and K counts the padded channels.
MatmulShape conv2d_mma_gemm_shape(const Conv2dShape& s, kir::Type half, bool channels_last = false);

// Whether the kernel computes this convolution: ungrouped, with at least one output channel and position.
bool conv2d_fits_tensor_cores(const Conv2dShape& s);
// The channels of the channels-last copies: Cin rounded up to a multiple of 8 (so that a 16-byte piece never straddles
// two pixels), the added ones zero.
int64_t conv2d_channels_last_depth(const Conv2dShape& s);

// Whether the kernel copies the input's rows (above): a 1x1 window at stride 1 without padding, and Ho * Wo a multiple
// of 8 (16-bit operands) or of 4 (f32, TF32).
bool conv2d_copies_input_rows(const Conv2dShape& s, kir::Type half);
// How the kernel stages its operands: mma_staging for its product, the input gathered unless channels last or its rows
// copied.
MmaStaging conv2d_mma_staging(const Conv2dShape& s, kir::Type half, const MatmulTiling& tiling, bool async_copies,
                              bool channels_last = false);

// The tiling: blocks of 128 output channels (64 or 32 where there are fewer) by 128 positions, or by 64 where workgroup
// memory is under 64 KiB (NVIDIA's Vulkan), 8 subgroups, K slices of 32; the gathered operand is staged in one stage,
// so other workgroups on the core hide its loads; copied input rows pipeline 3 stages deep where they fit, else 2.
// Both layouts: accumulators leave 4 at a time (MatmulTiling::results), else 2, where that fits.
MatmulTiling choose_conv2d_mma_tiling(const Conv2dShape& s, kir::Type half, const Limits& limits);
// The tuner's candidates: the choice above first, then other blocks, subgroup grids and slice depths that fit `limits`.
std::vector<MatmulTiling> conv2d_mma_candidates(const Conv2dShape& s, kir::Type half, const Limits& limits);
// Channels last: blocks as above (128 x 128 of 2 x 4 subgroups also where workgroup memory is small, since the staging
// needs no element registers), K slices of 32, the pipeline as deep as `limits` holds up to 3 stages (64-deep slices in
// 2 stages for windows of 2048 or more terms where workgroup memory is 64 KiB or more); and the tuner's candidates,
// that choice first.
MatmulTiling choose_conv2d_channels_last_tiling(const Conv2dShape& s, kir::Type half, const Limits& limits);
std::vector<MatmulTiling> conv2d_channels_last_candidates(const Conv2dShape& s, kir::Type half, const Limits& limits);

// Throws std::invalid_argument for a grouped convolution, a type other than f16, bf16 or f32 (TF32), or a tiling whose
// subgroups do not own whole 16x16 fragments. `async_copies`: the device has Feature::AsyncCopy.
HeavyKernel conv2d_mma_kernel(const Conv2dShape& s, kir::Type half, const MatmulTiling& tiling, bool async_copies,
                              bool channels_last = false);

}  // namespace spire::lowering::heavy
