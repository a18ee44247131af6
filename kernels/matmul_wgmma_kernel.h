// Matrix multiply on Hopper's warpgroup MMA: f16 or bf16 operands, f32 products and sums, through kir's warpgroup
// matrices (kernel.h's WarpgroupMulAdd; PTX wgmma, sm_90a) fed by tensor copies (kernel.h's TensorCopy; PTX
// cp.async.bulk.tensor).
//
// One workgroup computes one tile_m x tile_n block of one batch's output. Its first warpgroup is the producer: one
// invocation walks K in 64-deep slices and has the copy engine bring each slice of both operands into a ring of
// `stages` workgroup-memory stages, 128-byte swizzled (the layout wgmma reads fastest), announcing each stage's
// bytes to that stage's "full" arrival barrier. The other tile_m / 64 warpgroups are consumers, each owning 64 rows of
// the block across all tile_n columns as one warpgroup accumulator (tile_n / 2 f32 registers per invocation): they
// wait for a stage to be full, multiply it, and once those multiplies are done (one batch stays in flight) release
// the stage through its "empty" barrier for the producer to refill. No invocation computes an address of an operand
// element, and the copy engine zero-fills what lies past the operands' edges. The result leaves straight from the
// accumulator registers, two neighbouring columns per invocation per row (masked edges; epilogues fused into the
// stores work as for the other matmul kernels). Same buffers as matmul_kernel: a (read), b (read), c (write, f32).
//
// On an H100 this recipe reaches 716 TFLOP/s at 8192^3 in bf16 written as plain CUDA (tools/gpu/tma_gemm_probe.cu),
// cuBLAS's speed. It needs Feature::WarpgroupMatrix and Feature::TensorCopy, operands whose rows start on 16 bytes
// (tensor maps' strides) and batches that are one stride apart (or broadcast whole); the lowering picks it only
// where that holds (matmul_fits_warpgroup_mma), else the wmma kernel.
#pragma once

#include "kernels/matmul_kernel.h"

namespace spire::lowering::heavy {

// Whether the kernel computes this product: 16-bit operands as for matmul_fits_tensor_cores, a nonempty product,
// each operand's contiguous direction a multiple of 8 elements (16-byte rows), each operand's batches one stride
// apart or all the same, and a device with warpgroup MMA and tensor copies whose workgroup memory holds the smallest
// tiling.
bool matmul_fits_warpgroup_mma(const MatmulShape& s, kir::Type t, const Limits& limits);

// Workgroup memory of a tiling: `stages` 64-deep slices of both operands and two arrival barriers per stage.
uint64_t wgmma_shared_bytes(const MatmulTiling& tiling);

// 128x256 blocks (2 consumer warpgroups) 4 stages deep (192 KiB) where that still gives about one workgroup per core
// of an H100 (128) and fits, else 128x128, 64x128 (up to 6 stages), 64x64 (up to 8), each with the deepest pipeline
// that fits.
MatmulTiling choose_matmul_wgmma_tiling(const MatmulShape& s, const Limits& limits);
// The tuner's candidates: the choice above first, then blocks of 64 to 256 rows (1 to 4 consumer warpgroups) by 64 to
// 256 columns (multiples of 64), 2 to 8 stages, where they fit `limits` (and the register file).
std::vector<MatmulTiling> matmul_wgmma_candidates(const MatmulShape& s, const Limits& limits);

// Throws std::invalid_argument when the shape does not fit (see matmul_fits_warpgroup_mma, limits aside) or the
// tiling is not a warpgroup one (tile_m = 64 x warpgroups up to 256, tile_n a multiple of 64 up to 256, tile_k 64,
// 2 to 8 stages).
HeavyKernel matmul_wgmma_kernel(const MatmulShape& s, const MatmulTiling& tiling);

}  // namespace spire::lowering::heavy
