// A product of a few rows by a matrix: y [R, N] = x [R, K] x B, R <= kMatvecMostRows, B one matrix read as [K, N] or,
// transposed in place, as B^T [N, K] (a Linear layer's weight); or a batch of such products (attention's scores and
// values at one query: [heads, 1, K] x [heads, K, N]), a workgroup in one of them. A decoder's step at batch 1 is made of
// these (R = 1): each weight element is used once per row, so the product is bound by reading B once, which the tiled
// GEMM (matmul_kernel.h) does badly there (a 16x16 block per workgroup computes 16 outputs of its 256).
//
// A workgroup of kMatvecWorkgroup invocations owns a block of output columns; its invocations are `slices` groups
// that stride over K (slice s takes K-units s, s + slices, ...), each keeping one partial sum per row and column it
// covers, and the partial sums are added in slice order through workgroup memory: one fixed order on every device.
//   - B [K, N]: an invocation covers `lanes` neighbouring columns (4 where the sums are f32 and N a multiple of 4:
//     one 16-byte read a K step of f32 B; 8 of f16 or bf16 B where N is a multiple of 8 and there are at most 2 rows,
//     so that the partial sums fit any device's workgroup memory: 16 bytes in two 8-byte reads; else 1); neighbouring invocations cover
//     neighbouring columns, so a row of B is read coalesced. A unit of K is one row.
//   - B^T [N, K]: the `slices` neighbouring invocations share one column and read its row of B^T coalesced, `lanes`
//     elements (4 where the sums are f32 and K a multiple of 4, 8 of half B as above) a unit of K.
// A or B stored in f16 or bf16 (MatmulShape::a_half, b_half: a half policy's activations and weights) is widened as it
// is read; the sums are in the product's type (f32 under the half policies). The rows' x values are read as needed (every invocation of a slice
// reads the same ones: a broadcast from the cache).
//
// A layer_norm or rms_norm of A's rows may be computed in the kernel's reads of A (RowNorm: a decoder's norm before its
// projection costs no launch of its own): each workgroup first sums its rows' elements (the mean, then the second
// moment about it, in WorkgroupReduce's fixed order, as norm_kernels.h does) and each element of A read is normalized,
// scaled and shifted as the norm would have stored it. Every workgroup computes the same statistics: R rows of K
// elements, read again from the cache, against the K x (its columns) elements of B it reads once.
//
// Buffers: a (read), b (read), c (write), as matmul_kernel.h, then the norm's scale and bias (read); the result's
// stores take a fused epilogue.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "kernels/heavy_kernel.h"
#include "kernels/matmul_kernel.h"

namespace spire::lowering::heavy {

inline constexpr uint32_t kMatvecWorkgroup = 256;
// Rows of x a product may have: each invocation keeps a partial sum per row and column, so more rows would take
// registers and workgroup memory a GEMM's tiles use better.
inline constexpr int64_t kMatvecMostRows = 4;
// K units an invocation's loop takes per iteration (MatmulTiling::unroll for this kernel): their reads are issued
// before the multiply-adds that wait on them, so each invocation keeps that many reads in flight. The tuner also tries
// 8 and 16 (kMatvecUnrolls): a product bound by memory latency wants more reads in flight than a wide one.
inline constexpr uint32_t kMatvecUnroll = 4;
inline constexpr uint32_t kMatvecUnrolls[] = {4, 8, 16};

// Whether matvec_kernel computes `s`: B one matrix shared by every batch (broadcast) and at most kMatvecMostRows rows
// of A over every batch, or B batched (as stored or transposed) and at most that many rows (M) a batch; A read as
// stored, not transposed; and partial sums that fit in `limits`' workgroup memory.
bool matmul_fits_matvec(const MatmulShape& s, kir::Type t, const Limits& limits);

// The slice counts the tuner tries (powers of two a unit of K each at least).
std::vector<uint32_t> matvec_slice_candidates(const MatmulShape& s, kir::Type t);
// The heuristic's on a GPU: the fewest slices that give at least 256 workgroups (else the most); on a CPU device the
// fewest.
uint32_t choose_matvec_slices(const MatmulShape& s, kir::Type t, const Limits& limits);
// The heuristic's tiling (matvec_slices and unroll: kMatvecUnroll on a CPU device; on a GPU 16 up to 256 workgroups,
// past them 4 or 8 where that takes an invocation's share of K in one iteration, else 4), and the
// tuner's
// candidates: that first, then every slice count with every unroll of kMatvecUnrolls.
MatmulTiling choose_matvec_tiling(const MatmulShape& s, kir::Type t, const Limits& limits);
std::vector<MatmulTiling> matvec_candidates(const MatmulShape& s, kir::Type t, const Limits& limits);

// The norm whose result A is: A's buffer holds the norm's input (a_half where it is half), the kernel its parameters.
struct RowNorm {
  bool center = true;  // layer_norm (the mean subtracted; a bias); false: rms_norm
  double epsilon = 1e-5;
  kir::Type scale = kir::Type::F32, bias = kir::Type::F32;  // the vectors' stored types
  // What kernel names and tuning keys append for it.
  const char* tag() const { return center ? "_layer_norm" : "_rms_norm"; }
  friend bool operator==(const RowNorm&, const RowNorm&) = default;
};
// Whether matvec_kernel computes `s` with a RowNorm of A: one B for every row (not batched), A not transposed.
bool matvec_takes_row_norm(const MatmulShape& s, kir::Type t, const Limits& limits);

// `subgroup`: the device's Limits::subgroup_size, which a RowNorm's sums shuffle across (the same bits either way).
// `unroll`: K units a loop iteration (kMatvecUnrolls' values; any of 1 to 32 builds).
// Paired columns: each workgroup computes columns n and `half` + n for its block of n < half (N = 2 half), so that one
// invocation holds both results of a pair (SwiGLU's gate and up over one merged product, lowering/fuse.h's paired
// epilogue). With `combine`, output c [R, half] (of type `out`) holds combine(index r * half + n, y[r, n],
// y[r, half + n]) and y itself is not stored; without it, c is y [R, N] as unpaired (the columns' other mapping alone).
// B^T only (s.b_transposed), an even N, and at least two columns a workgroup (slices <= kMatvecWorkgroup / 2).
struct MatvecPair {
  uint32_t half = 0;
  kir::Type out = kir::Type::F32;
  std::function<kir::Val(kir::KernelBuilder& kb, kir::Val index, kir::Val first, kir::Val second)> combine;
};
// Whether matvec_kernel pairs `s`'s columns with `slices` slices.
bool matvec_pairs(const MatmulShape& s, uint32_t slices);

HeavyKernel matvec_kernel(const MatmulShape& s, kir::Type t, uint32_t slices, const std::optional<RowNorm>& norm = {},
                          uint32_t subgroup = 0, uint32_t unroll = kMatvecUnroll, const MatvecPair* pair = nullptr);

}  // namespace spire::lowering::heavy
