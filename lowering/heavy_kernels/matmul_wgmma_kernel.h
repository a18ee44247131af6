// Matrix multiply on Hopper's warpgroup MMA: f16 or bf16 operands, f32 products and sums, through kir's warpgroup
// matrices (kernel.h's WarpgroupMulAdd; PTX wgmma, sm_90a).
//
// One workgroup computes one tile_m x tile_n block of one batch's output with tile_m / 64 warpgroups, each owning 64
// rows of it across all tile_n columns as one warpgroup accumulator (tile_n / 2 f32 registers per invocation). The
// operands reach workgroup memory by 16-byte asynchronous copies, `stages` K slices deep, already in the 8x8-block
// layout the multiply reads (so they never pass through registers); each slice's multiplies run while the copies of
// later slices land, one batch of multiplies in flight past each slice. The result leaves straight from the
// accumulator registers, two neighbouring columns per invocation per row (masked edges; epilogues fused into the
// stores work as for the other matmul kernels). Same buffers as matmul_kernel: a (read), b (read), c (write, f32).
//
// It needs Feature::WarpgroupMatrix and Feature::AsyncCopy, and operands whose rows start on 16 bytes (the copies);
// the lowering picks it only where that holds (matmul_fits_warpgroup_mma), else the wmma kernel.
#pragma once

#include "lowering/heavy_kernels/matmul_kernel.h"

namespace spire::lowering::heavy {

// Whether the kernel computes this product: 16-bit operands as for matmul_fits_tensor_cores, each operand's
// contiguous direction a multiple of 8 elements (16-byte rows), and a device with warpgroup MMA whose workgroup
// memory holds the smallest tiling.
bool matmul_fits_warpgroup_mma(const MatmulShape& s, kir::Type t, const Limits& limits);

// Workgroup memory of a tiling: `stages` slices of both operands.
uint64_t wgmma_shared_bytes(const MatmulTiling& tiling);

// 128x256 blocks (2 warpgroups) with 64-deep slices 4 stages deep (192 KiB) where that still gives about one
// workgroup per core of an H100 (128) and fits, else 128x128, 64x128, 64x64, with the deepest pipeline (3 to 5
// stages) that fits.
MatmulTiling choose_matmul_wgmma_tiling(const MatmulShape& s, const Limits& limits);
// The tuner's candidates: the choice above first, then blocks of 64 to 256 rows (1 to 4 warpgroups) by 64 to 256
// columns, 32- and 64-deep slices, 3 to 8 stages, where they fit `limits` (and the register file).
std::vector<MatmulTiling> matmul_wgmma_candidates(const MatmulShape& s, const Limits& limits);

// Throws std::invalid_argument when the shape does not fit (16-bit operands, 16-byte rows) or the tiling is not a
// warpgroup one (tile_m = 64 x warpgroups, tile_n a multiple of 8 up to 256, tile_k a multiple of 16, 3 to 8 stages).
HeavyKernel matmul_wgmma_kernel(const MatmulShape& s, const MatmulTiling& tiling);

}  // namespace spire::lowering::heavy
