// A convolution kernel that also stores the max pooling of its result (lowering/fuse.h's pooled side outputs): 2x2
// windows that tile the result, each window's largest stored value (the kernel takes each value through kir's
// epilogue tap, so a bias and ReLU the lowering folds into its stores are in it) stored into a fourth buffer, "pooled".
//
// The kernels that do it own whole result rows or columns: a window's two halves lie in two neighbouring invocations
// (local ids 2k and 2k + 1: the next row of the same channel, or the next column of the same strip), which swap their
// halves' maxima through a subgroup shuffle and split the window's stores between them (no barrier, no workgroup
// memory; meeting in workgroup memory behind two barriers measured no faster on the H100, docs/PERFORMANCE.md). Devices
// without shuffles run the pooling in a launch of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/kernel/builder.h"
#include "kernels/heavy_kernel.h"
#include "kernels/pool2d_kernels.h"
#include "kernels/tuning_config.h"

namespace spire::lowering::heavy {

// True where a kernel over a result of ho x wo per plane can store `pool` as a side output on a device of `limits`:
// 2x2 windows at stride 2 without padding over even ho and wo (the windows tile the result), and subgroup shuffles.
bool pools_in_pairs(const Pool2dShape& pool, int64_t ho, int64_t wo, const Limits& limits);

// The workgroup a pooling kernel of `wg` invocations launches: PTX's shuffles name all 32 lanes of a warp, so there it
// is rounded up to whole warps (the extra invocations compute nothing; they pair among themselves).
uint32_t pooled_workgroup(uint32_t wg, const Limits& limits);

// How a pair splits its windows' stores: the even invocation the first half, the odd one the rest. Measured inside
// LeNet's step at batch 8192 on the H100 (docs/PERFORMANCE.md):
//  * Selected: each store's element and value selected by the invocation's parity, so a subgroup issues each store
//    once: the staged kernels (the first convolution's strips 0.154 ms on cuda:0 and 0.127 on vulkan:0, against 0.156
//    and 0.129 branched; the second's staged images on cuda:0 0.264 against 0.266).
//  * Branched: each half in a branch of its own, the subgroup running both: the row kernel (the second convolution on
//    vulkan:0, 0.294 ms against 0.307 selected).
enum class PairStores { Selected, Branched };

// What a convolution's kernel stores besides (or instead of) its result.
struct PooledOutputs {
  Pool2dShape pool;
  bool argmax = false;  // also each window's position (graph.h's max_pool2d_argmax), into "argmax" (i32)
  bool result = true;   // false: the result is only tapped, never stored (nothing but the side outputs reads it)

  // "_pooled", "_pooled_argmax", "_pooled_argmax_only": what kernel names carry.
  std::string suffix() const;
};

// The side outputs' buffers, declared after the kernel's own: "pooled" (write), then "argmax" (i32, write) if asked.
struct PooledBuffers {
  kir::Buf pooled;
  std::optional<kir::Buf> argmax;
};
PooledBuffers declare_pooled_buffers(kir::KernelBuilder& kb, const PooledOutputs& out, kir::Type t);

// How a pair's two invocations split each 2x2 window: Rows, the even one holds its top row and the odd one its bottom
// row (the row kernels); Columns, the left and right columns (the strips kernel).
enum class PairHalves { Rows, Columns };

// One invocation's half of a window: its two elements in row-major window order.
struct WindowHalf {
  kir::Val first, second;
};

// Every invocation calls this in uniform control flow (it shuffles). `halves`: the invocation's half of each of its
// windows (the same count in both invocations of a pair, whose local ids differ in their lowest bit); `valid`: the
// invocation computed them (both of a pair agree). Both learn each window's maximum and its position by max_pool2d's
// rule (the first maximal element in row-major order, or the last NaN: the same element max_pool2d_kernel picks, so
// the same bits) and store their half of the windows, index_of(k) being window k's pooled element and `exists` (if
// given) whether window k exists (a strip reaching past the result).
void store_pair_maxima(kir::KernelBuilder& kb, PairStores split, PairHalves layout, kir::Val lid, kir::Val valid,
                       const std::vector<WindowHalf>& halves, const std::function<kir::Val(uint32_t k)>& index_of,
                       const PooledBuffers& out, const std::function<kir::Val(uint32_t k)>& exists = {});

}  // namespace spire::lowering::heavy
