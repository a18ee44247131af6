// 2D convolution (NCHW input, [Cout, Cin/groups, kh, kw] weights) with stride, padding, dilation and groups,
// and its two gradients. Deterministic: no atomics anywhere.
//
//  * conv2d_kernel: one invocation per output row (n, co, ho) where rows are at most 32 wide (and there are
//    >= 1024 of them), else per output element, looping over its group's input channels and the window.
//    In the row form every column is a constant, so each input element and weight is loaded once per row.
//    Buffers: x (read), w (read), y (write).
//  * conv2d_grad_input_kernel: the same shape of kernel over input rows (or elements), gathering from every
//    output position whose window covers them. Buffers: grad_y (read), w (read), grad_x (write).
//  * conv2d_grad_weight_kernel: one workgroup per (cout, cin-in-group) pair, block of window taps (all of a
//    window of up to 32 taps) and split of the N x Ho x Wo sum. Its invocations stride over their split
//    (whole output rows where Wo <= 32 and the block spans the window's width, else single positions),
//    keeping one sum per tap in registers (each grad_y element read once serves every tap), then one
//    shared-memory tree per tap adds them. With splits == 1 it writes grad_w; otherwise partial sums
//    [splits][weights] that conv2d_grad_weight_sum_kernel adds in a fixed order (no atomics).
//    Buffers: grad_y (read), x (read), grad_w or partial_grad_w (write).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/heavy_kernel.h"
#include "kernels/pooled_side_output.h"
#include "kernels/tuning_config.h"

namespace spire::lowering::heavy {

struct Pool2dShape;

struct Conv2dShape {
  int64_t n = 0, cin = 0, h = 0, w = 0;  // input [N, Cin, H, W]
  int64_t cout = 0, kh = 0, kw = 0;      // weights [Cout, Cin/groups, kh, kw]
  int64_t ho = 0, wo = 0;                // output [N, Cout, Ho, Wo]
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1, groups = 1;

  int64_t cin_per_group() const { return cin / groups; }
  // Stride 1, dilation 1 and one group: the geometry the kernels that stage whole images take.
  bool dense_unit_stride() const {
    return stride_h == 1 && stride_w == 1 && dil_h == 1 && dil_w == 1 && groups == 1;
  }
  int64_t cout_per_group() const { return cout / groups; }
  // "n8_c1_h28_w28_k6_r5x5_s1x1_p2x2_d1x1_g1": what kernel names carry.
  std::string text() const;
};

// The longest row, in columns, that a kernel computes whole in one invocation (rows=1, row mode, staged images): each
// column is a constant of the kernel, unrolled.
inline constexpr int64_t kMaxRowCols = 32;
// The most register sums one invocation of the staging kernels keeps (results, or weight-gradient taps).
inline constexpr int64_t kMaxSums = 64;
// The most parts a weight gradient's sum is split into: plain configs stay within 64; staged ones, whose splits divide
// whole images, may take this many (layers of few weights over long sums need them to fill a GPU).
inline constexpr uint32_t kMaxStagedSplits = 512;
// Why the kernels that stage whole images and take output rows whole cannot serve shape `s` ("" when they can): they
// need stride 1, dilation 1, one group, and output rows of at most kMaxRowCols columns.
std::string staged_rows_refusal(const Conv2dShape& s);

// Validates the geometry (ranks 4, channels divisible by groups, window fits) and computes Ho, Wo; throws
// std::invalid_argument naming the problem. stride, padding and dilation are (height, width) pairs.
Conv2dShape conv2d_shape(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                         const std::vector<int64_t>& dilation, int64_t groups);

// How conv2d and conv2d_grad_input spread their work (their config space): rows = 1 gives each invocation a
// whole result row (only where rows are at most 32 columns and the window at most 32 wide), rows = 0 one
// result element; with c_block > 1 (it must divide the result's channels per group: output channels of
// conv2d, input channels of conv2d_grad_input) that row or element of c_block neighbouring channels, so each
// element it loads serves all of them (rows: at most 64 sums per invocation). wg is the workgroup size.
struct Conv2dConfig {
  bool rows = false;
  uint32_t wg = 256, c_block = 1;
  // conv2d only, elements of every output channel (c_block = Cout, no groups): each workgroup first copies all the
  // weights into workgroup memory, channel-fastest in fours, so an invocation reads 4 channels' weights of a tap per
  // load, instead of loading every weight from memory itself (at most 16 KiB of weights).
  bool shared_w = false;
  // With shared_w: result elements per invocation, one after another, so the weights a workgroup copies serve this
  // many times more elements (1..64).
  uint32_t pixels = 1;
  // With rows: the window's rows as a loop in the kernel rather than unrolled. Unrolled, every row's loads of a
  // channel are in flight at once (ILP), at the price of registers: LeNet's second convolution took 175-218 registers
  // per invocation on the H100's cuda:0, which left 8 warps per core.
  bool row_loop = false;
  // An occupancy request (kir::Kernel::min_workgroups_per_core; 0: none): this many workgroups resident per core, so
  // that a backend that allocates registers (PTX) keeps each invocation within the register file's share.
  uint32_t per_core = 0;
  // With rows: whole images staged in workgroup memory with every weight (conv2d_images_kernel.h), each workgroup
  // wg / ((result channels / c_block) x result rows) images. Without rows (conv2d only, c_block = every output
  // channel): the same staging, each invocation a strip of `pixels` elements of one column
  // (conv2d_image_strips_kernel.h), each workgroup wg / (ceil(ho / pixels) x wo) images.
  bool images = false;
  // "rows=0,wg=256,c_block=1" (",shared_w=1" when set, ",pixels=8" when more than 1, ",row_loop=1" when set,
  // ",per_core=20" when requested, ",images=1" when set)
  Config config() const;
  static Conv2dConfig from(const Config& c);
  friend bool operator==(const Conv2dConfig&, const Conv2dConfig&) = default;
};
// What the templates pick without tuning: on a GPU (limits.cpu false, the default) elements of all output channels
// with shared_w where there are at most 8 (16 elements per invocation in 64 where that still leaves 528 workgroups;
// at >= 1024 small images, strips of them staged whole instead: images with rows=0); else rows where rows are short
// and there are >= 1024 of them (64 per workgroup; several channels per row where rows are many; small images staged
// whole through ptxas: images), else one element per invocation (256 per workgroup).
Conv2dConfig conv2d_heuristic(const Conv2dShape& s, const Limits& limits = {});
Conv2dConfig conv2d_grad_input_heuristic(const Conv2dShape& s, const Limits& limits = {});
// The tuner's candidates (the heuristic first), within the device's workgroup size.
std::vector<Conv2dConfig> conv2d_candidates(const Conv2dShape& s, const Limits& limits, kir::Type t = kir::Type::F32);
std::vector<Conv2dConfig> conv2d_grad_input_candidates(const Conv2dShape& s, const Limits& limits,
                                                      kir::Type t = kir::Type::F32);

// Throw std::invalid_argument for a config the shape cannot take (rows on long rows, a c_block that does not
// divide the result's channels per group, a workgroup size outside 1..1024).
// `limits`: the device's, for configs that take more than the 16 KiB of workgroup memory every device has (images).
HeavyKernel conv2d_kernel(const Conv2dShape& s, kir::Type t, const Conv2dConfig& c, const Limits& limits = {});
// With pooled side outputs (pooled_side_output.h): the kernel of config `c` also stores each window's largest value of
// `pool.pool` (over the result) into a fourth buffer, "pooled" (write), and with pool.argmax its position into a fifth,
// "argmax" (i32, write), where conv2d_pools_in_kernel says it can; else std::invalid_argument. Without pool.result the
// result buffer stays declared (the epilogue taps it) but is not written.
HeavyKernel conv2d_kernel(const Conv2dShape& s, kir::Type t, const Conv2dConfig& c, const Limits& limits,
                          const PooledOutputs& pool);
// Whether config `c`'s kernel can store `pool` of its result on a device of `limits`: rows (rows=1) and staged images
// (images=1, strips of an even number of pixels) over 2x2 windows that tile the result, in workgroups of an even size,
// where the device has subgroup shuffles (pooled_side_output.h).
bool conv2d_pools_in_kernel(const Conv2dShape& s, const Conv2dConfig& c, const Pool2dShape& pool, const Limits& limits);
HeavyKernel conv2d_grad_input_kernel(const Conv2dShape& s, kir::Type t, const Conv2dConfig& c, const Limits& limits = {});
inline HeavyKernel conv2d_kernel(const Conv2dShape& s, kir::Type t) { return conv2d_kernel(s, t, conv2d_heuristic(s)); }
inline HeavyKernel conv2d_grad_input_kernel(const Conv2dShape& s, kir::Type t) {
  return conv2d_grad_input_kernel(s, t, conv2d_grad_input_heuristic(s));
}

// How conv2d_grad_weight tiles its work (its config space): a workgroup of wg invocations (a power of two)
// owns one (cout, cin-in-group) pair, a block of block_rows x block_cols taps of the window (one register sum
// per tap, at most 32) and one of `splits` parts of the N x Ho x Wo sum (1..64; more than one adds a second
// launch, conv2d_grad_weight_sum_kernel). row_mode = 1 walks whole output rows (needs the block to span the
// window's width and rows of at most 32 columns).
struct GradWeightConfig {
  uint32_t block_rows = 1, block_cols = 1;
  uint32_t wg = 32;
  uint32_t splits = 1;
  bool row_mode = false;
  // Output channels per workgroup (dividing those per group): each input element loaded serves all of them, at
  // block_rows x block_cols x co_block sums per invocation (at most 64).
  uint32_t co_block = 1;
  // Row mode through workgroup memory: each step the workgroup copies whole images' grad_y planes and input planes
  // into workgroup memory, neighbouring invocations reading neighbouring elements, then each invocation takes one
  // output row from there. Plain row mode reads each row straight from memory, and
  // neighbouring invocations' rows lie a row apart, so every load instruction touches as many cache lines as the
  // workgroup has rows. Needs row_mode and wg >= the output's rows; splits then divide the images, up to 512.
  bool staged = false;
  // An occupancy request, as Conv2dConfig::per_core: row mode's sums and rows take many registers (LeNet's second
  // convolution: 187, 10 warps per core).
  uint32_t per_core = 0;
  // Every weight in one workgroup, whole images staged per step (conv2d_grad_weight_images_kernel.h): needs row_mode
  // and the whole window as the block; splits (up to 512) divide the images, each invocation owns co_block output
  // channels x one input channel x one window row, wg covers them.
  bool all_pairs = false;
  // With all_pairs: each owner's output rows split among this many invocations (row r to invocation r % row_split),
  // whose sums workgroup memory adds at the end: more invocations where few own sums (LeNet's first convolution: 5
  // window rows x 6 output channels).
  uint32_t row_split = 1;
  // "block_rows=5,block_cols=5,wg=64,splits=2,row_mode=1" (",co_block=2" when > 1, ",staged=1" when staged,
  // ",per_core=16" when requested, ",all_pairs=1" when set, ",row_split=28" when > 1)
  Config config() const;
  static GradWeightConfig from(const Config& c);
  friend bool operator==(const GradWeightConfig&, const GradWeightConfig&) = default;
};
// The heuristic config; on GPUs (not `limits.cpu`) small-channel row shapes take two output channels per workgroup.
GradWeightConfig conv2d_grad_weight_heuristic(const Conv2dShape& s, kir::Type t, const Limits& limits = Limits{});
std::vector<GradWeightConfig> conv2d_grad_weight_candidates(const Conv2dShape& s, kir::Type t, const Limits& limits);
// Throws std::invalid_argument for a config the shape or the 16 KiB of workgroup memory every device has
// cannot take; `limits` allows more where the device has it.
HeavyKernel conv2d_grad_weight_kernel(const Conv2dShape& s, kir::Type t, const GradWeightConfig& c,
                                      const Limits& limits = {});

// How many workgroups share each weight's N x Ho x Wo sum (1..64 for the heuristic): enough workgroups to fill a large GPU
// without leaving each invocation only a few terms.
uint32_t conv2d_grad_weight_splits(const Conv2dShape& s, kir::Type t);
HeavyKernel conv2d_grad_weight_kernel(const Conv2dShape& s, kir::Type t, uint32_t splits);
// The single-launch form (splits = 1 whatever conv2d_grad_weight_splits says): writes grad_w directly.
HeavyKernel conv2d_grad_weight_kernel(const Conv2dShape& s, kir::Type t);
// Adds the partial sums of conv2d_grad_weight_kernel(s, t, splits > 1). Buffers: partial_grad_w (read),
// grad_w (write). bias: each split's partials are its weights' and then its bias's ([splits][weights + cout],
// conv2d_grad_weight_images_kernel's bias_sums), and a third buffer grad_b (write) takes the bias's sums.
HeavyKernel conv2d_grad_weight_sum_kernel(const Conv2dShape& s, kir::Type t, uint32_t splits, bool bias = false);


}  // namespace spire::lowering::heavy
