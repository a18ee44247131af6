// conv2d and its two gradients as implicit GEMMs (the forward described here; the gradients below).
//
// conv2d as an implicit GEMM: Y[co, (n, ho, wo)] = W[co, (ci, kh, kw)] x X'[(ci, kh, kw), (n, ho, wo)], where X'
// is the im2col matrix of the input, never built: the tiled GEMM body (tiled_gemm.h) gathers each of its
// elements from the NCHW input as it stages a slice, zero where the window hangs over the padding, and
// scatters each result to its NCHW place. Weights are already the row-major [Cout, Cin*kh*kw] matrix.
//
// Where it pays: many output channels and positions (batches of images), where the direct kernels
// (conv2d_kernels.h) re-read every input element once per output channel from memory, and the GEMM reuses it
// from workgroup memory across a whole block of channels. The direct kernels stay for grouped convolutions
// and small problems. Buffers, as conv2d_kernel's: x (read), w (read), y (write).
#pragma once

#include "kernels/conv2d_kernels.h"
#include "kernels/matmul_kernel.h"

namespace spire::lowering::heavy {

// The GEMM a convolution is: M = Cout, K = Cin * kh * kw, N = batch * Ho * Wo (no batch dimensions).
MatmulShape conv2d_gemm_shape(const Conv2dShape& s);

// Throws std::invalid_argument for a grouped convolution or an inconsistent tiling.
HeavyKernel conv2d_gemm_kernel(const Conv2dShape& s, kir::Type t, const MatmulTiling& tiling);

// The input gradient: grad_x[ci, (n, h, w)] = W'[ci, (co, kh, kw)] x G[(co, kh, kw), (n, h, w)], where G gathers
// grad_y at the output position whose window puts tap (kh, kw) on input (h, w): oh = (h + pad - kh * dil) /
// stride where that divides exactly and lands inside, else zero (with stride s, all but 1/s² of the terms of a
// window are such zeros: the price of one GEMM for every stride). M = Cin, K = Cout * kh * kw, N = batch * H * W.
// Buffers, as conv2d_grad_input_kernel's: grad_y (read), w (read), grad_x (write).
MatmulShape conv2d_grad_input_gemm_shape(const Conv2dShape& s);
HeavyKernel conv2d_grad_input_gemm_kernel(const Conv2dShape& s, kir::Type t, const MatmulTiling& tiling);

// The input gradient of a strided convolution without those zeros, one GEMM per phase: the input rows h = rh + sh * q
// (one residue rh of the stride) are reached only by the taps kh = ah + sh * j with ah = (rh + pad_h) mod sh, from
// output row q + bh - j, bh = (rh + pad_h - ah) / sh; likewise columns. So each phase is a dense GEMM:
// grad_x[ci, (n, qh, qw)] = W'[ci, (co, jh, jw)] x G[(co, jh, jw), (n, qh, qw)], M = Cin, K = Cout * th * tw,
// N = batch * rows * columns of the phase. A phase no tap reaches (a window smaller than the stride) is a GEMM with
// K = 0: it stores zeros. For ungrouped convolutions with a stride on some axis and no dilation
// (conv2d_grad_input_phased). One launch runs every phase, each workgroup one block of one phase (the phases' blocks
// side by side in the grid): at batch 1 a phase alone fills a fraction of a GPU, and separate launches ran one after
// another. With tiling.splits > 1 each block's K range is split over that many workgroups (split-K, for the few
// blocks and long windows of a small batch) that write partial sums [splits][grad_x elements] at grad_x's own
// indices, which split_sum_kernel adds in a fixed order.
struct GradInputPhase {
  uint32_t rh = 0, rw = 0;  // the residues of the phase's input rows and columns
  uint32_t qh = 0, qw = 0;  // its rows and columns: h = rh + stride_h * q for q < qh
  uint32_t ah = 0, aw = 0;  // the first tap row and column reaching them
  uint32_t th = 0, tw = 0;  // how many tap rows and columns reach them (stride apart)
  uint32_t bh = 0, bw = 0;  // tap j reads output row q + bh - j (columns likewise)
};
bool conv2d_grad_input_phased(const Conv2dShape& s);
// Every phase, rows of residues outer; those without positions (an input smaller than the stride) left out.
std::vector<GradInputPhase> conv2d_grad_input_phases(const Conv2dShape& s);
MatmulShape conv2d_grad_input_phase_gemm_shape(const Conv2dShape& s, const GradInputPhase& phase);
// Buffers: grad_y (read), w (read), grad_x (write; with tiling.splits > 1 the partial sums, [splits][N * Cin * H * W]).
// Splits 1..64; throws std::invalid_argument otherwise. `reached_only` (unsplit): no workgroups for the phases no tap
// reaches, whose elements a zero fill launched before (zero_fill_kernel.h) has set; their zeros stored through the
// GEMM's scattered stores took three quarters of a 1x1 stride-2 layer's time (kernel name "..._phases_reached").
bool conv2d_grad_input_has_unreached_phases(const Conv2dShape& s);
HeavyKernel conv2d_grad_input_phases_kernel(const Conv2dShape& s, kir::Type t, const MatmulTiling& tiling,
                                            bool reached_only = false);

// The weight gradient: grad_w[co, (ci, kh, kw)] = G[co, (n, ho, wo)] x X'[(n, ho, wo), (ci, kh, kw)], X' the
// im2col matrix of the input. Its K (every output position of the batch) is long and its result small, so the K
// range is split over `splits` workgroups per block (split-K); with splits > 1 each writes partial sums
// [splits][weights] that conv2d_grad_weight_sum_kernel adds in a fixed order (deterministic, no atomics).
// M = Cout, N = Cin * kh * kw, K = batch * Ho * Wo. Buffers: grad_y (read), x (read), grad_w or the partial sums
// (write).
MatmulShape conv2d_grad_weight_gemm_shape(const Conv2dShape& s);
// Splits that give the device about 512 workgroups of 64x64 or smaller blocks, 256 of 128x128 (as the Winograd weight
// gradient's products, lower_conv2d.cpp), each still summing at least 8 of the tiling's K slices. On the H100
// (docs/PERFORMANCE.md) resnet18's first layer at batch 64 (3 blocks of 64x64) took 1.53 / 1.30 ms (vulkan:0 / cuda:0)
// split 64 ways (the cap before), 1.08 / 0.98 split 256; 128x128 blocks split past 256 workgroups ran slower.
uint32_t conv2d_grad_weight_gemm_splits(const Conv2dShape& s, const MatmulTiling& tiling);
// Splits 1..kMaxGradWeightGemmSplits; throws std::invalid_argument otherwise.
inline constexpr uint32_t kMaxGradWeightGemmSplits = 512;
HeavyKernel conv2d_grad_weight_gemm_kernel(const Conv2dShape& s, kir::Type t, const MatmulTiling& tiling,
                                           uint32_t splits);

}  // namespace spire::lowering::heavy
