// Matrix multiply on workgroup matrices (kir::Feature::WorkgroupMatrix: Vulkan's VK_NV_cooperative_matrix2): f16 or
// bf16 operands, f32 products and sums.
//
// One workgroup of 256 invocations computes one tile_m x tile_n block of one batch's output as a single workgroup
// matrix. Each K slice of A (tile_m x tile_k) and of B (tile_k x tile_n) is loaded straight from the buffers as a
// workgroup matrix and multiplied into the accumulator; the driver stages them through workgroup memory and
// pipelines the loads itself (where the 48 KiB NVIDIA's Vulkan driver gives a workgroup caps the hand-staged
// kernel of matmul_mma_kernel.h at two shallow stages). Measured on an H200's vulkan:0 it is correct but 20-30%
// slower than that kernel at 4096 and 8192 (docs/PERFORMANCE.md), so the lowering offers it to the tuner only. Slices past K and rows or columns past the product read
// as zeros; the block is stored whole, the parts outside the product dropped. The K loop is unrolled `unroll`
// slices deep. Same buffers as matmul_kernel: a (read), b (read), c (write, f32).
//
// The result is stored as a whole matrix, so no pointwise epilogue folds into its stores (the lowering then
// launches the epilogue on its own: lower_graph.cpp's apply_epilogue).
#pragma once

#include "kernels/matmul_kernel.h"

namespace spire::lowering::heavy {

// Whether the kernel computes this product: 16-bit operands as for matmul_fits_tensor_cores, a nonempty product,
// and every batch's operands and result starting on 16 bytes (batch strides of multiples of 8 elements, and of 4
// for the f32 result), as tensor loads and stores require.
bool matmul_fits_workgroup_mma(const MatmulShape& s, kir::Type t);

// The first of the tuner's workgroup-matrix candidates (lower_matmul.cpp keeps the subgroup kernel as the heuristic):
// 128x256 blocks with 32-deep slices where that still gives about one workgroup per core of an H100 (128), else
// 128x128, else 64x64, not unrolled.
MatmulTiling choose_matmul_workgroup_mma_tiling(const MatmulShape& s);
// The tuner's candidates: the choice above first, then blocks of 64 to 256 rows and columns (multiples of 32
// as NVIDIA's granularity for 256 invocations asks) with 16- to 64-deep slices, unrolled 1 or 4 deep.
std::vector<MatmulTiling> matmul_workgroup_mma_candidates(const MatmulShape& s);

// Throws std::invalid_argument when the shape does not fit (matmul_fits_workgroup_mma) or the tiling is not a
// workgroup-matrix one (tile_m and tile_n multiples of 32 up to 1024, tile_k a multiple of 16 up to 1024, unroll 1
// to 8).
HeavyKernel matmul_workgroup_mma_kernel(const MatmulShape& s, const MatmulTiling& tiling);

}  // namespace spire::lowering::heavy
