// Which form of kernel a convolution (or one of its gradients) takes for its shape, and that form's tiling: the direct
// kernels (conv2d_kernels.h), an implicit GEMM (conv2d_gemm_kernels.h), a Winograd transform around a batched product
// (conv2d_winograd_kernels.h), or tensor cores (conv2d_mma_kernel.h) on operands as stored or moved channels last. The heuristics a lowering starts from (lowering/lower_conv2d.cpp), as
// choose_matvec_tiling is the few-rows product's; the tuner times the other candidates.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "kernels/conv2d_kernels.h"
#include "kernels/matmul_kernel.h"
#include "kernels/tuning_config.h"

namespace spire::lowering::heavy {

// A config of the GEMM family carries a tiling (tile_m, ...); the direct family's carry rows, wg, c_block.
bool conv2d_is_gemm_config(const Config& c);

// The GEMM form where the tiled GEMM would use its large blocks (64x64 or more: many channels and positions);
// elsewhere the direct kernels, which have no staging overhead and spread small problems wider.
std::optional<MatmulTiling> conv2d_gemm_pays(const Conv2dShape& s, const MatmulShape& gemm, kir::Type t);

// Where few positions give the GEMM few blocks (a strided layer of many channels at batch 1), small blocks still beat
// the direct kernels on a GPU: those spread each output row's long window sums over few invocations (resnet18's strided
// layers at batch 1 on the H100: rows 0.094-0.27 ms, the tuner's GEMM picks 0.020-0.047 ms for the 3x3 ones and
// 0.006-0.009 ms for the 1x1 ones on both backends, docs/PERFORMANCE.md). 32x32 blocks where they give 64 or more
// workgroups, else 16x16; 32-deep slices. Windows of at least 64 terms and 32 output channels: LeNet's keep theirs.
std::optional<MatmulTiling> conv2d_small_gemm_pays(const Conv2dShape& s, const MatmulShape& gemm,
                                                   kir::Type t, const Limits& limits);

// The heuristic first, then the direct family's candidates, then the GEMM tilings (ungrouped convolutions).
std::vector<Config> conv2d_with_gemm_candidates(Config heuristic, std::vector<Config> direct,
                                                const Conv2dShape& s, const MatmulShape& gemm, kir::Type t,
                                                const Limits& limits,
                                                const std::function<Config(const MatmulTiling&)>& config);

// The weight gradient's result is small and its K long: its blocks come from splitting K, so the GEMM pays
// wherever a 64x64 block of the result is full, whatever the count of blocks. With few positions (K < 256: a small
// batch's late layers) the blocks are all there is: 64x64 where they are 64 or more, else 32x32. On the H100 at batch 1
// (docs/PERFORMANCE.md) resnet18's strided layers' weight gradients took 0.017-0.019 ms that way (layer3's and layer4's
// 3x3) and 0.006-0.013 ms (their 1x1 downsamples), against 0.026-0.135 ms on the direct kernels before.
std::optional<MatmulTiling> conv2d_grad_weight_gemm_pays(const Conv2dShape& s, const MatmulShape& gemm,
                                                         kir::Type t);

// The input gradient of a strided layer at a small batch (resnet18's at batch 1): the phases' GEMMs (M = Cin) have
// too few positions for 64x64 blocks to fill the GPU, and the direct kernels spread each element's long window sum
// over few invocations. The K range (Cout * taps of a phase) is then split (split-K; a second launch adds the splits,
// 3-4 us). A long window (2048 or more terms) over 64 or more channels keeps 64x64 blocks of 4x4 per invocation, split
// until 128 workgroups; otherwise, as the forward's small blocks (conv2d_small_gemm_pays), 32x32 where the phases a tap
// reaches give 64 or more of them, else 16x16, split until 512 workgroups; every split keeps 8 or more slices. On the
// H100 at batch 1 (docs/PERFORMANCE.md), vulkan:0 / cuda:0, kernel and adding launch: layer4's 3x3 (K = 2048) 0.027 /
// 0.022 ms in 64x64 blocks split 8 ways against 0.036 / 0.033 in 32x32 split 4 and 0.059 / 0.051 in 16x16 unsplit;
// layer3's (K = 1024) 0.030 ms on cuda:0 in 32x32 split 4, 0.033 unsplit. GPUs only, windows of 64 or more terms and
// 32 or more input channels (LeNet's keep the direct kernels). `longest`: the largest phase's K and N.
std::optional<MatmulTiling> conv2d_small_grad_input_tiling(const Conv2dShape& s, const MatmulShape& longest,
                                                           kir::Type t, const Limits& limits);

// Winograd (conv2d_winograd_kernels.h): the batched product's tiling, marked "winograd=<the output tile's side>" (2:
// F(2x2, 3x3), 4: F(4x4, 3x3)).
Config conv2d_winograd_config(const MatmulTiling& tl, uint32_t tile);
bool conv2d_is_winograd_config(const Config& c);
uint32_t conv2d_winograd_tile_of(const Config& c);

// The transformed input or product, the larger scratch buffer, in bytes.
int64_t conv2d_winograd_scratch_bytes(const Conv2dShape& s, kir::Type t, uint32_t tile);

// Where the transforms' passes over memory are small next to the product they save: channels enough for the product
// to be the time (resnet18's 3x3 layers of 64 to 512 channels on the H100: docs/PERFORMANCE.md); and where the
// scratch buffers, 4x the input and output, stay within 1 GiB each (a large image takes the implicit GEMM instead).
bool conv2d_winograd_pays(const Conv2dShape& s, kir::Type t);

// F(4x4, 3x3) for float32 (f16 and bf16 convolutions compute in it too) where its products have 256 tiles or more and
// it multiplies less than F(2x2, 3x3) over the tiles it covers (36 products per 16 outputs against 16 per 4; a plane of
// odd size wastes more of the larger tiles), its scratch fitting as F(2x2, 3x3)'s must. On the H100 (docs/PERFORMANCE.md)
// resnet18's 3x3 layers at batch 64 (256 to 12544 tiles) ran 1.1-1.5x faster with it on both backends, forward and both
// gradients, but at batch 1 (4 to 196 tiles: products of few columns) up to 2.4x slower. Its constants (up to 8, and
// 1/3, 1/15) cost precision: 1-3x the implicit GEMM's error in float32 (tests/tuning/winograd_precision_test.cpp); not
// measured against float64's much tighter tolerance, which keeps F(2x2, 3x3).
uint32_t conv2d_winograd_tile(const Conv2dShape& s, kir::Type t);

// The batched product's tiling: the matmul heuristic's, but where it takes 64x64 blocks (64 output channels), 8x8
// outputs per invocation rather than 4x4 (resnet18's 64-channel layers at batch 64 on the H100: 0.467 -> 0.400 ms).
MatmulTiling conv2d_winograd_tiling_64(kir::Type t);
MatmulTiling conv2d_winograd_tiling(const MatmulShape& product, kir::Type t);

// The weight gradient's product has few blocks (planes x Cin x Cout) and a long K (every tile of the batch): the
// forward product's tiling, then K split in two until about 4 workgroups of 64x64 per core of a 132-core GPU (512 in
// all; 256 of 128x128), each split keeping at least 8 slices of K. The tuner's picks on the H100 for resnet18's 3x3
// layers at batch 64 (docs/PERFORMANCE.md): 32, 8, 2 and 1 splits for 64 to 512 channels (the rule before, 256
// workgroups: 16, 4, 1, 1 splits, 1.22-1.37x slower on cuda:0 where they differ; on vulkan:0 1.22x for 128 channels).
MatmulTiling conv2d_winograd_grad_weight_tiling(const MatmulShape& product, kir::Type t);

// Whether a Winograd program's scratch and partial sums are addressable with 32-bit indices.
bool conv2d_winograd_addressable(const Conv2dShape& s, kir::Type t, uint32_t tile, uint32_t max_splits);

// The tiles a Winograd program is offered with (F(2x2, 3x3), and for float32 F(4x4, 3x3)), those whose scratch and
// partial sums (`max_splits` of them) are addressable; and the heuristic's among them (conv2d_winograd_tile's where offered).
struct Conv2dWinogradTiles {
  std::vector<uint32_t> offered;
  uint32_t chosen = 0;  // 0: none offered
};

Conv2dWinogradTiles conv2d_winograd_tiles_offered(const Conv2dShape& s, kir::Type t, uint32_t max_splits);

// Where the tensor-core kernel reads channels-last copies of its operands: where it can (Cin % 8 == 0) and the window
// has more than one tap, or is 1x1 and gathers (below). On the H100 at batch 64 in bf16 (docs/PERFORMANCE.md) that took
// resnet18's 3x3 layers from 0.136-0.144 ms to 0.073-0.078 (strided, cuda:0) and 0.108-0.120 to 0.064-0.090 (vulkan:0);
// its 1x1 stride-2 layers, which read a quarter of the input the move passes over whole, went from 0.018-0.028 to
// 0.021-0.049. Channels padded to a multiple of 8 are the tuner's to try: resnet18's first layer (3 channels padded to
// 8, 2.7x the products) took 0.482 / 0.550 ms channels last against 0.503 / 0.547 as stored (vulkan:0 / cuda:0).
// A 1x1 window whose input rows cannot be copied (conv2d_copies_input_rows: a stride, or images of ragged 16-byte
// pieces) gathers each element of X' once per block row of output channels, while the move passes over the input once:
// channels last pays with 256 or more output channels at stride 1 (2 block rows), 1024 strided (the move passing over
// 4x what the window reads). On the H200 at batch 32 in bf16: resnet50's 14x14 layers 0.050 ms (move and convolution)
// against 0.059-0.062 gathered, its 7x7 ones 0.025-0.030 against 0.091-0.115, its 1024-channel strided one 0.119 against
// 0.155, and its 512-channel strided one even (0.193 against 0.198); resnet18's strided 1x1 layers (128-512 channels)
// at batch 64 took 0.053-0.093 moved, where the H100 ran them gathered in 0.018-0.028.
bool conv2d_channels_last_pays(const Conv2dShape& s, kir::Type half);

// Where the tensor-core kernel beats widening the operands and running the f32 kernels (the H100, both backends,
// docs/PERFORMANCE.md): enough blocks to fill the GPU (64 or more of its tiling, or 32 of long windows: resnet18's
// layers at batch 64 and its first layer at batch 1 took 0.4-0.7x the f32 time; its layers at batch 1, 4 to 25 blocks,
// 1.2-7x), and not a 3x3 window at stride 1 that Winograd takes unless channels last (0.47-0.58x Winograd's f32 time at
// batch 64 on both backends) or with 128 or more channels where workgroup memory is small (vulkan:0: 0.60-0.92x there
// as stored). TF32 (`half` f32) multiplies at half bf16's rate, through wmma: Winograd's f32 layers win there where
// they have 64 or more output channels (resnet18 at batch 32 on the H200: 0.072 ms a 3x3 layer against the TF32
// implicit GEMM's 0.12-0.14; the model 2.55 -> 2.33 ms, resnet50 7.69 -> 7.47), but not densenet121's 3x3 layers of 32
// output channels (the model 10.27 -> 11.87 ms with Winograd), whose batched products are too narrow.
bool conv2d_tensor_cores_pay(const Conv2dShape& s, kir::Type half, const Limits& limits);

}  // namespace spire::lowering::heavy
