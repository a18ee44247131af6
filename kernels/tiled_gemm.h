// The body every GEMM-shaped kernel shares: one workgroup computes one tile_m x tile_n block of a product
// C[M, N] = A[M, K] x B[K, N], staging tile_k-deep slices of A and B through workgroup memory between barriers,
// each invocation accumulating reg_m x reg_n outputs in registers.
//
// The operands are functions, not buffers: matmul reads A and B from memory, and the implicit-GEMM convolution
// (conv2d_gemm_kernel) gathers its B from the input image on the fly (im2col without the matrix) and scatters
// C into NCHW. So one tiling, one tuner space and one set of bank-conflict and coalescing decisions serve both.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ir/kernel/builder.h"
#include "kernels/matmul_kernel.h"

namespace spire::lowering::heavy {

struct GemmOperands {
  // A[row, k] and B[k, col]. They are called with indices that may lie beyond M, N or K (a tile's edge) and
  // must return zero there, without reading out of bounds (clamp the address, then select). Indices stay within an
  // extent that is a multiple of its tile size (tile_m, tile_n, tile_k), which then needs no such check.
  std::function<kir::Val(kir::Val row, kir::Val k)> a;
  std::function<kir::Val(kir::Val k, kir::Val col)> b;
  // Optional vector reads: 4 consecutive elements along the operand's contiguous direction (k for a row-major A, rows
  // for a transposed one; columns for a row-major B, k for a transposed one) from a start that is a multiple of 4,
  // with zeros outside as above. Given where the operand can (extents and offsets multiples of 4); the body then
  // stages 4 elements per read where the tile allows.
  std::function<std::vector<kir::Val>(kir::Val row, kir::Val k)> a4;
  std::function<std::vector<kir::Val>(kir::Val k, kir::Val col)> b4;
  // Stores one result; called only for row < M and col < N.
  std::function<void(kir::Val row, kir::Val col, kir::Val value)> store;
  // How consecutive invocations stage B: along its columns (false: a row-major B, as matmul's) or along k (true:
  // a B whose k is the contiguous direction in memory, as the weight gradient's gathered input).
  bool b_k_fastest = false;
  // Likewise for A: along k (false: a row-major A) or along its rows (true: a transposed A, rows contiguous).
  bool a_m_fastest = false;
  // Optional: the sums of A's rows over the block's K range, passed once per row < M at the end (a linear layer's
  // bias gradient beside its weight gradient: the row sums of the transposed output gradient). Every workgroup
  // computes them (an add per staged element, then one more barrier); the callee decides which store them.
  std::function<void(kir::Val row, kir::Val sum)> a_row_sum;
};

// How the body lays out a tiling's work (a function of the tiling and type alone, so the tuner's memory check and the
// kernel agree).
struct GemmLayout {
  // Outputs in groups of 4 contiguous rows and columns, read from workgroup memory 16 bytes at a time
  // (kir::LoadSharedVector): 32-bit types with reg_m and reg_n multiples of 4.
  bool vector_loads = false;
  // Subgroups cover 8 x 4 patches of the invocation grid rather than whole rows (grids of whole patches).
  bool patches = false;
  uint32_t a_ld = 0;  // elements per k of A's staged slice (tile_m plus padding)
};
GemmLayout tiled_gemm_layout(const MatmulTiling& tiling, kir::Type t);
// Workgroup memory the body declares.
uint64_t tiled_gemm_shared_bytes(const MatmulTiling& tiling, kir::Type t);

// The workgroup arrays the body stages its slices in. A kernel that emits several bodies in branches (one per phase of
// a strided input gradient) declares them once and passes them to each: one body's memory, not the sum of them.
struct GemmStaging {
  kir::Shared a_tile, b_tile;
};
GemmStaging declare_gemm_staging(kir::KernelBuilder& kb, kir::Type t, const MatmulTiling& tiling);

// Emits the block at (row0, col0) into `kb`, whose workgroup has tiling.invocations() invocations; `lid` is the
// local invocation id. Contains barriers: every invocation of the workgroup must reach it. Declares its own staging
// arrays unless given them.
void emit_tiled_gemm(kir::KernelBuilder& kb, kir::Type t, const MatmulTiling& tiling, uint32_t M, uint32_t N,
                     uint32_t K, kir::Val row0, kir::Val col0, kir::Val lid, const GemmOperands& io,
                     const std::optional<GemmStaging>& staging = std::nullopt);

}  // namespace spire::lowering::heavy
