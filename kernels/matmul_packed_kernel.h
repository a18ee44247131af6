// Matrix multiply on tensor cores from packed operands: f16 or bf16 operands, f32 products and sums.
//
// Through NVIDIA's Vulkan driver the tensor-core kernel (matmul_mma_kernel.h) stages its operands in registers and
// then 48 KiB of workgroup memory: no asynchronous copy, so every operand byte is loaded, stored and loaded again,
// and that, not the products, bounds it (docs/PERFORMANCE.md). Here each operand is first laid out once in the
// device's own fragment order (kir's MatrixStorePacked, by a launch of its own), so that the product loads every
// fragment it multiplies as one contiguous 16-byte load per invocation straight from the buffer: no workgroup memory
// and no barrier in its K loop. A weight's packing reads only a parameter and so runs once (parameter_launches.h).
//
// Packed layout of an operand whose `outer` dimension is M (A) or N (B): tiles of 16 (outer) x 16 (k), padded with
// zeros to whole blocks of the product along `outer` and to whole laps of its K loop along K, plus `lookahead` tiles
// past those that the loop reads ahead and never multiplies. Tile (o, kt) lies at element ((o * k_stride + kt) * 32 +
// lane) * 8, each lane's share (kir::kPackedShare) contiguous.
//
// Buffers: the packing launch reads the operand as matmul reads it (s.a_transposed, s.b_transposed) and writes its
// packed form; the product reads both packed forms and writes c (f32 [M, N], masked edges, epilogues fused into its
// stores as for the other kernels). Unbatched products only.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/matmul_kernel.h"

namespace spire::lowering::heavy {

// Whether packed operands fit this product: both operands stored as f16 or both as bf16 (as the tensor-core kernel),
// one batch.
bool matmul_fits_packed(const MatmulShape& s, kir::Type t);

// Where the device has cooperative matrices, does not compile through PTX (whose cp.async and wgmma kernels need no
// packing) and gives a workgroup under 64 KiB (NVIDIA's Vulkan driver): 128x96 blocks of 2 x 2 subgroups (64x48
// each), 8 fragment sets, 2 K slices ahead, for products of at least 1024 blocks of 128x128 and K of at least 256
// (128x64 blocks of 64x32, 3 ahead, where 96-column blocks would pad N by over 5% more than 64-column ones).
// The H100's vulkan:0, bf16 8192^3: 2.94-3.09 ms with both packing launches (53-54% of cuBLAS in the same runs)
// against 4.11 for the tensor-core kernel (docs/PERFORMANCE.md).
std::optional<MatmulTiling> choose_matmul_packed_tiling(const MatmulShape& s, const Limits& limits);
// The tuner's candidates (empty where the choice above has no place to run): blocks of 64x48, 48x64, 48x48 and 64x32
// per subgroup, 1 to 3 slices ahead of 8 sets.
std::vector<MatmulTiling> matmul_packed_candidates(const MatmulShape& s, const Limits& limits);

// Elements of an operand's packed form (A's, or B's when `b`).
uint64_t packed_operand_elements(const MatmulShape& s, const MatmulTiling& tiling, bool b);
// The launch that packs A (or B, when `b`): buffers src (read, the operand's 16-bit type) and packed (write). Staged by
// 16-byte copies where `async_copies` and the operand's rows start on 16 bytes, else element by element.
HeavyKernel matmul_pack_kernel(const MatmulShape& s, const MatmulTiling& tiling, bool b, bool async_copies);
// The product: buffers a_packed, b_packed (read) and c (write). Throws std::invalid_argument when the shape does not
// fit or the tiling is not a packed one whose subgroups own whole fragments.
HeavyKernel matmul_packed_kernel(const MatmulShape& s, const MatmulTiling& tiling);

}  // namespace spire::lowering::heavy
