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
#include <vector>

#include "ir/kernel/builder.h"
#include "lowering/heavy_kernels/heavy_kernel.h"
#include "lowering/heavy_kernels/pool2d_kernels.h"
#include "lowering/heavy_kernels/tuning_config.h"

namespace spire::lowering::heavy {

// True where a kernel over a result of ho x wo per plane can store `pool` as a side output on a device of `limits`:
// 2x2 windows at stride 2 without padding over even ho and wo (the windows tile the result), and subgroup shuffles.
bool pools_in_pairs(const Pool2dShape& pool, int64_t ho, int64_t wo, const Limits& limits);

// The workgroup a pooling kernel of `wg` invocations launches: PTX's shuffles name all 32 lanes of a warp, so there it
// is rounded up to whole warps (the extra invocations compute nothing; they pair among themselves).
uint32_t pooled_workgroup(uint32_t wg, const Limits& limits);

// The larger of a and b by max_pool2d's rule (takes_window_max: a NaN is the larger).
kir::Val pool_max(kir::Val a, kir::Val b);

// How a pair splits its windows' stores: the even invocation the first half, the odd one the rest. Measured inside
// LeNet's step at batch 8192 on the H100 (docs/PERFORMANCE.md):
//  * Selected: each store's element and value selected by the invocation's parity, so a subgroup issues each store
//    once: the staged kernels (the first convolution's strips 0.154 ms on cuda:0 and 0.127 on vulkan:0, against 0.156
//    and 0.129 branched; the second's staged images on cuda:0 0.264 against 0.266).
//  * Branched: each half in a branch of its own, the subgroup running both: the row kernel (the second convolution on
//    vulkan:0, 0.294 ms against 0.307 selected).
enum class PairStores { Selected, Branched };

// Every invocation calls this in uniform control flow (it shuffles). `halves`: the invocation's maxima over its half
// of each of its windows (the same count in both invocations of a pair, whose local ids differ in their lowest bit);
// `valid`: the invocation computed them (both of a pair agree). Both learn each window's maximum and store their half
// of the windows through store(pooled element, window maximum), index_of(k) being window k's pooled element and
// `exists` (if given) whether window k exists (a strip reaching past the result).
void store_pair_maxima(kir::KernelBuilder& kb, PairStores split, kir::Val lid, kir::Val valid,
                       const std::vector<kir::Val>& halves, const std::function<kir::Val(uint32_t k)>& index_of,
                       const std::function<void(kir::Val index, kir::Val max)>& store,
                       const std::function<kir::Val(uint32_t k)>& exists = {});

}  // namespace spire::lowering::heavy
