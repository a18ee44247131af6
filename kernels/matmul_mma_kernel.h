// Matrix multiply on tensor cores: f16 or bf16 operands, or f32 ones rounded to TF32 (the tf32 precision policy, PTX
// only), f32 products and sums, through kir's cooperative matrices (16x16x16 fragments per subgroup of 32; PTX wmma).
// TF32 operands are staged as f32: a tile's bytes double, so the tilings below fit fewer stages or shallower slices.
//
// One workgroup computes one tile_m x tile_n block of one batch's output with warps_m x warps_n subgroups, each
// owning a (tile_m / warps_m) x (tile_n / warps_n) part of it as 16x16 accumulators. The operands are staged
// tile_k deep through workgroup memory in their stored form (rows padded by 16 bytes, so the fragment loads of
// neighbouring rows fall in different banks); the result leaves through per-subgroup 16x16 f32 staging tiles
// (MatmulTiling::results of them a round, between two workgroup barriers), so every element is stored by one
// invocation with an ordinary store (masked edges; epilogues fused into the stores work as for the SIMT kernel). Same buffers as matmul_kernel: a (read), b (read), c (write, f32).
//
// A tiling with unroll = stages unrolls the pipelined K loop by its depth: each slice's stage is a constant, and
// each round's copies are distinct statements, which is what lets the SPIR-V backend (copies staged through
// registers) keep stages - 1 slices in flight; its result then leaves through 4 subgroups' staging tiles in turns,
// so that a 3-stage 128x256x16 pipeline fits NVIDIA's 48 KiB.
//
// It needs Feature::CooperativeMatrix, so the lowering picks it only on devices that report that
// (heavy::Limits::cooperative_matrix), and only for products whose operands are both f16 or both bf16.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/matmul_kernel.h"

namespace spire::lowering::heavy {

// Whether the tensor-core kernel computes this product: both operands stored in the same 16-bit float type
// (read in place, MatmulShape::a_half and b_half), or both f32 multiplied as TF32 (MatmulShape::tf32), and an f32
// product.
bool matmul_fits_tensor_cores(const MatmulShape& s, kir::Type t);
// The type the operands are staged and multiplied in: their 16-bit type, or f32 for TF32 (an f32 fragment, which the
// PTX backend multiplies as TF32, ir/kernel/kernel.h).
kir::Type mma_operand_type(const MatmulShape& s);

// The tiling for a shape: 256x128 blocks of 8 subgroups (4 x 2, 64x64 each, K slices of 64) where that still
// gives the device enough workgroups and `limits` holds 3 or 4 stages of it; where workgroup memory is under 64 KiB,
// 128x256 of 8 (2 x 4) with K slices of 16, 3 stages, the K loop unrolled by them, and (not through PTX) 4 more
// subgroups that only copy (where both operands copy; else 16 subgroups (4 x 4), 2 stages); else 128x128 of 4
// (2 x 2), else
// 64x64 of 4 (32x32 each), else 32x32 of 4 (one fragment each), K slices of 32, as many stages (2 to 4) as
// `limits` holds.
MatmulTiling choose_matmul_mma_tiling(const MatmulShape& s, const Limits& limits);
// The tuner's candidates: the choice above first, then the other block shapes, K slices and (where both operands
// copy) pipeline depths of 2 to 4, rolled and unrolled, that fit `limits`; off PTX, each unrolled one also with 2 and
// with 4 copying subgroups.
std::vector<MatmulTiling> matmul_mma_candidates(const MatmulShape& s, const Limits& limits);

// How the kernel stages its operands: with 16-byte asynchronous copies (Feature::AsyncCopy) where the operand's
// rows start on 16 bytes, the tiling's stages deep (at least 2) when both operands copy (the next slices land while
// this one is multiplied), else element by element through registers, one stage.
struct MmaStaging {
  bool a_copies = false, b_copies = false;
  uint32_t stages = 1;
  uint32_t b_pad = 0;         // elements of padding after each row of B's tile (MatmulTiling::b_unpadded: none)
  uint32_t result_tiles = 0;  // subgroups' 16x16 f32 tiles the result leaves through (every subgroup's unless unrolled)
  uint64_t shared_bytes = 0;  // workgroup memory the kernel declares
};
// `b_gathered`: B is gathered element by element (MmaGemmIo), never copied.
MmaStaging mma_staging(const MatmulShape& s, const MatmulTiling& tiling, bool async_copies, bool b_gathered = false);

// Throws std::invalid_argument when the shape does not fit (matmul_fits_tensor_cores) or the tiling is not a
// tensor-core one whose subgroups own whole fragments. `async_copies`: the device has Feature::AsyncCopy.
HeavyKernel matmul_mma_kernel(const MatmulShape& s, const MatmulTiling& tiling, bool async_copies);

// The kernel's body for other products of the same form (the implicit-GEMM convolution on tensor cores,
// conv2d_mma_kernel.h): A read from a buffer as matmul reads it (s.a_transposed, s.a_batch_strides); B from a buffer
// likewise, or gathered element by element (no buffer: the im2col matrix of a convolution, never built), or read from
// a buffer at places the caller locates (the same matrix over a channels-last input); each result handed to `store`.
struct MmaGemmIo {
  kir::Buf a;
  std::optional<kir::Buf> b;  // unset: B is gathered
  // Values worked out once per column of a block (col may lie past N), before the K loop, for b_gather or b_locate.
  std::function<std::vector<kir::Val>(kir::Val col)> b_prepare;
  // A gathered B: for each element of a slice, stores B[k, col] (zero where k >= K or col >= N) into tile[to].
  std::function<void(kir::Shared tile, kir::Val to, const std::vector<kir::Val>& prepared, kir::Val k)> b_gather;
  // A located B (with `b` set): for the piece of a slice that starts at k (with s.b_transposed, tiles [column][k]: 8
  // consecutive k of one column where B copies 16 bytes at a time, else one element; otherwise, tiles [k][column]: that
  // many consecutive columns at k, b_prepare's column their first), whether it lies in the product and its first
  // element in `b`. The caller keeps a piece's elements contiguous and 16-byte aligned in `b`.
  std::function<std::pair<kir::Val, kir::Val>(const std::vector<kir::Val>& prepared, kir::Val k)> b_locate;
  // Stores one result of batch `batch`: row < M, col < N.
  std::function<void(kir::Val batch, kir::Val row, kir::Val col, kir::Val value)> store;
};
// The 16x16 accumulators each multiplying subgroup of a tensor-core tiling owns.
uint32_t mma_subgroup_accumulators(const MatmulTiling& tiling);
// Throws std::invalid_argument for a tiling whose subgroups do not own whole fragments, whose stages or unrolling the
// body cannot run, or whose result rounds (MatmulTiling::results) do not divide a subgroup's accumulators.
void check_mma_tiling(const MatmulTiling& tiling);
// "_t<block>_w<subgroups>[_c<stages>][_u][_p<copiers>][_bu][_r<rounds>]_mma_f32": what a kernel's name says of its tiling and staging.
std::string mma_name_suffix(const MatmulTiling& tiling, const MmaStaging& plan);
// Emits the body into `kb` (its workgroup of tiling.invocations(), the caller's buffers declared); `plan` is
// mma_staging's for the same product. M, N and the batch count must be nonzero. Returns the workgroup count.
uint64_t emit_mma_gemm(kir::KernelBuilder& kb, const MatmulShape& s, const MatmulTiling& tiling, const MmaStaging& plan,
                       const MmaGemmIo& io);

}  // namespace spire::lowering::heavy
