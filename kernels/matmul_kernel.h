// Matrix multiply [.., M, K] x [.., K, N] -> [.., M, N] with numpy-broadcast batch dimensions.
//
// Tiled: one workgroup computes one tile_m x tile_n block of one batch's output, staging tile_k-wide slices
// of A and B through workgroup memory between barriers; each invocation accumulates a reg_m x reg_n block
// of outputs in registers. Edges are masked (sizes need not be multiples of a tile). The linear workgroup id
// is decomposed into (batch, tile row, tile column), tile column fastest.
//
// Buffers, in order: a (read), b (read), c (write). No scalars.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/heavy_kernel.h"
#include "kernels/tuning_config.h"

namespace spire::lowering::heavy {

struct MatmulShape {
  std::vector<int64_t> batch;            // the result's batch dimensions
  std::vector<int64_t> a_batch_strides;  // per result batch dim: A's element stride (0 where A broadcasts)
  std::vector<int64_t> b_batch_strides;  // same for B
  std::vector<int64_t> a_batch;          // A's own batch dims and B's (for the kernel's name)
  std::vector<int64_t> b_batch;
  int64_t m = 0, k = 0, n = 0;
  // An operand read transposed in place: the buffer holds A^T [K, M] (or B^T [N, K]) of a rank-2 operand, whose
  // transpose the lowering absorbed (lowering/fuse.h, absorbed_transpose).
  bool a_transposed = false, b_transposed = false;
  // An operand stored in f16 or bf16 that the kernel widens to the product's type as it loads (lowering/fuse.h,
  // absorbed_upcast); unset: stored in the product's type.
  std::optional<kir::Type> a_half, b_half;
  // Both operands stored as f32 and multiplied on tensor cores as TF32 (the tf32 precision policy; only the
  // tensor-core kernels, matmul_mma_kernel.h, compute such a shape). text() says "_tf32".
  bool tf32 = false;

  int64_t batch_count() const;
  // "m64_k784_n120", with "_a<A's batch>_b<B's batch>" for batched products, "_at" / "_bt" for transposed
  // operands and "_abf16" / "_bf16" (f16 likewise) for half ones: what kernel names and tuning keys carry.
  std::string text() const;
};

// The shape of matmul(a, b) for operand shapes a [.., M, K] and b [.., K, N]; throws std::invalid_argument
// when ranks are below 2, the inner dimensions differ or the batch dimensions do not broadcast.
MatmulShape matmul_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

struct MatmulTiling {
  uint32_t tile_m = 16, tile_n = 16, tile_k = 16;  // output block per workgroup, K slice per stage
  uint32_t reg_m = 1, reg_n = 1;                   // outputs per invocation (strided by tile/reg)
  // Split-K (the SIMT kernel): this many workgroups share each block's K range and write partial sums
  // [splits][batches][M][N] that split_sum_kernel adds in order; for products with few blocks and a long K.
  uint32_t splits = 1;
  // Tensor cores (matmul_mma_kernel.h): warps_m x warps_n subgroups of 32, each owning a (tile_m / warps_m) x
  // (tile_n / warps_n) part of the block as 16x16 cooperative matrix fragments; reg_m and reg_n are then unused
  // (1). 0: the SIMT kernel above.
  uint32_t warps_m = 0, warps_n = 0;
  // Tensor cores: K slices in flight when both operands are fed by asynchronous copies (a pipeline of `stages`
  // shared-memory buffers per operand). `unroll` = stages there: the K loop unrolled that deep (see
  // matmul_mma_kernel.h), else 1.
  uint32_t stages = 2;
  // Warpgroup MMA (matmul_wgmma_kernel.h): this many warpgroups of 128 multiply, each owning 64 rows of the block
  // across its tile_n columns, and one more feeds them; warps_m, warps_n, reg_m and reg_n unused. 0: not that kernel.
  uint32_t warpgroups = 0;
  // Workgroup matrices (matmul_workgroup_mma_kernel.h): the block is one workgroup matrix of 256 invocations, its K
  // loop unrolled `unroll` slices deep; warps, reg_m, reg_n and stages unused. (`unroll` serves the tensor-core kernel
  // too: above.)
  bool workgroup_matrix = false;
  uint32_t unroll = 1;
  // Tensor cores with a pipeline (both operands copied): this many more subgroups of 32 only copy the operands'
  // slices, so that the multiplying subgroups issue no copies and hold no copy in their registers. 0: the
  // multiplying subgroups copy too.
  uint32_t producers = 0;
  // Tensor cores: accumulators each subgroup stages at once on their way out (the result path below, matmul_mma_kernel.h):
  // a round of `results` costs two workgroup barriers and lets each invocation issue its stores, and the epilogue's loads,
  // for all of them together, for `results` x 1 KiB of workgroup memory a subgroup. 1: one at a time.
  uint32_t results = 1;
  // Tensor cores, B read as [column][k] (transposed: a Linear layer's weight): B's tile rows without the 16 bytes of
  // padding the other tiles get. Rows of a 16-deep slice are then 32 bytes and B's fragment loads meet 2-way bank
  // conflicts, but the slice takes a third less workgroup memory: where that is 48 KiB (NVIDIA's Vulkan driver), 3
  // stages of 128x256x16 fit only so. Ignored for a B read as [k][column].
  bool b_unpadded = false;
  // Packed fragments (matmul_packed_kernel.h): the operands are first laid out in the device's fragment order by
  // launches of their own, and the product's subgroups load each fragment straight from that, `lookahead` K slices of
  // 16 ahead of the one they multiply, through `stages` sets of fragments in turn (the K loop unrolled by them). 0:
  // not that kernel. warps_m x warps_n subgroups as for the tensor-core kernel; tile_k is 16.
  uint32_t lookahead = 0;
  // A product of a few rows (matvec_kernel.h): that kernel with this many K slices and `unroll` K units a loop
  // iteration (kMatvecUnroll where the config text has none), every other field unused. 0: not that kernel.
  uint32_t matvec_slices = 0;
  bool matvec() const { return matvec_slices > 0; }
  bool packed() const { return lookahead > 0; }
  bool tensor_cores() const { return warps_m > 0; }
  bool warpgroup_mma() const { return warpgroups > 0; }
  uint32_t invocations() const {
    return workgroup_matrix || matvec() ? 256
           : warpgroup_mma() ? (warpgroups + 1) * 128
           : tensor_cores()  ? (warps_m * warps_n + producers) * 32
                             : (tile_m / reg_m) * (tile_n / reg_n);
  }
  // "tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4" (",splits=4" when split; "tile_m=128,tile_n=128,tile_k=32,
  // warps_m=2,warps_n=4,stages=3" for tensor cores (",unroll=3" when unrolled, ",producers=4" with copying
  // subgroups, ",b_unpadded=1", ",results=4"), "tile_m=128,tile_n=256,tile_k=64,warpgroups=2,stages=4" for warpgroup MMA,
  // "tile_m=128,tile_n=256,tile_k=64,workgroup_matrix=1,unroll=4" for workgroup matrices, ",lookahead=4" after a
  // tensor-core config for packed fragments, "matvec_slices=16" for the few-rows kernel) and back (throws
  // std::invalid_argument for a missing value; a missing splits is 1, a missing stages 2).
  Config config() const;
  static MatmulTiling from(const Config& c);
  friend bool operator==(const MatmulTiling&, const MatmulTiling&) = default;
};

// The tiling the lowering uses for a shape: the largest block that still gives the device enough
// workgroups to spread over its cores: 128x128 blocks with 8x8 outputs per invocation for large products,
// 64x64 with 4x4 for medium ones (64x32 with 4x2 where fewer than 128 columns would be padded by over a quarter),
// else 16x16 with one output per invocation. A product with too few blocks for
// that and a long K (a weight gradient over a large batch) splits K instead. The K slice keeps workgroup
// memory within 16 KiB, the least a Vulkan device may offer (f64 takes half as deep a slice).
MatmulTiling choose_matmul_tiling(const MatmulShape& s, kir::Type t);
// The same for a device: on GPUs other than through PTX, a product with a short K (< 256) takes 64x64 blocks (4x4)
// where the above takes 128x128; on a CPU device (Limits::cpu) every product of extents >= 32 takes 64x64 blocks of
// 8x8 per invocation, 16 deep (8 in f64), never split, and narrower ones 16x16.
MatmulTiling choose_matmul_tiling(const MatmulShape& s, kir::Type t, const Limits& limits);

// The tuner's candidates for a shape: the heuristic's tiling first, then blocks of 16 to 256 rows or columns, square,
// 2:1 and 4:1 shapes with 1x1 to 8x8 outputs per invocation and 4- to 32-deep K slices, where the block is not far
// larger than the product, the workgroup (64 to 512 invocations, within the device's limit) and its two
// slices (within the device's workgroup memory) fit, and the unrolled slice stays at most 1024 multiply-adds.
std::vector<MatmulTiling> matmul_candidates(const MatmulShape& s, kir::Type t, const Limits& limits);

// Throws std::invalid_argument for a non-float type or an inconsistent tiling. With tiling.splits > 1 its buffer c
// holds the partial sums [splits][batches][M][N], which matmul_split_sum_kernel adds into the result.
//
// row_sums (unbatched products): the kernel also sums A's rows over K, the bias gradient of a linear layer whose weight
// gradient this is (grad_y^T x: the rows of grad_y^T are the sums over the batch). The workgroups of the first block
// column store them: unsplit into a fourth buffer, row_sums [M]; split, after each split's partial products (c is then
// [splits][M * N + M]), and matmul_split_sum_kernel's row_sums form writes them to its third buffer.
HeavyKernel matmul_kernel(const MatmulShape& s, kir::Type t, const MatmulTiling& tiling, bool row_sums = false);
HeavyKernel matmul_split_sum_kernel(const MatmulShape& s, kir::Type t, const MatmulTiling& tiling, bool row_sums = false);
inline HeavyKernel matmul_kernel(const MatmulShape& s, kir::Type t) { return matmul_kernel(s, t, choose_matmul_tiling(s, t)); }

// Element offset of batch `b` (linear over s.batch, last dim fastest) in an operand with `strides`
// (s.a_batch_strides or s.b_batch_strides).
kir::Val matmul_batch_offset(kir::KernelBuilder& kb, const MatmulShape& s, kir::Val b, const std::vector<int64_t>& strides);

// Checks the parts of a product every matmul kernel indexes with 32 bits (throws std::invalid_argument) and
// returns its name stem "matmul_<shape>".
std::string matmul_checked_name(const MatmulShape& s);

}  // namespace spire::lowering::heavy
