// softmax / log_softmax over one axis, and the mean cross-entropy loss with its gradient.
//
//  * softmax_kernel: rows are all index combinations of the other dims. Short axes: one invocation per row,
//    three passes (max, sum of exp(x - max), write); neighbouring invocations take neighbouring rows of the
//    innermost dims, so their reads coalesce. Long axes: one workgroup per row, the passes strided over its
//    invocations with shared-memory tree reductions. Buffers: x (read), y (write).
//  * cross_entropy_kernel: logits [N, C], labels [N] (i32 on the device) -> scalar mean over N of
//    -log_softmax[n, label]. One workgroup; each invocation handles rows n = lid, lid + wg, ...; a tree in
//    shared memory adds the per-invocation sums (deterministic). A label outside [0, C) gives NaN.
//    Buffers: logits (read), labels (read), loss (write, 1 element).
//  * cross_entropy_grad_kernel: grad_out (scalar), logits, labels -> [N, C] = grad * (softmax - one_hot) / N.
//    Short rows: one invocation per element, recomputing its row's max and sum. Long rows (C >=
//    kSoftmaxWorkgroupRowFrom): one workgroup per row, max and sum computed once by trees. Buffers: grad_loss
//    (read), logits (read), labels (read), grad_logits (write).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/heavy_kernel.h"
#include "kernels/tuning_config.h"

namespace spire::lowering::heavy {

using SoftmaxShape = AxisRows;

// From a shape and the (non-negative) axis; throws std::invalid_argument if the axis is out of range.
inline SoftmaxShape softmax_shape(const std::vector<int64_t>& shape, int64_t axis) {
  return axis_rows(shape, axis, "softmax");
}

// A workgroup per row from this axis length (or class count) on; one invocation per row (or element) below.
inline constexpr int64_t kSoftmaxWorkgroupRowFrom = 256;
// ... and for rows of 32 or more when there are fewer rows than this (softmax_heuristic).
inline constexpr int64_t kFewRows = 256;

// The config space of softmax and of cross_entropy_grad: per_row = 1 gives each row a workgroup of wg
// invocations (a power of two) that reduces through shared-memory trees, per_row = 0 one invocation per row
// (softmax) or per element (cross_entropy_grad) in workgroups of wg.
struct RowConfig {
  bool per_row = false;
  uint32_t wg = 256;
  Config config() const;  // "per_row=0,wg=256"
  static RowConfig from(const Config& c);
  friend bool operator==(const RowConfig&, const RowConfig&) = default;
};
// Without tuning: a workgroup per row from kSoftmaxWorkgroupRowFrom on, or from 32 elements when there are fewer than
// kFewRows rows (as many invocations as the row has,
// 32 to 256), else 256 invocations per workgroup.
RowConfig softmax_heuristic(const SoftmaxShape& s);
RowConfig cross_entropy_grad_heuristic(int64_t n, int64_t c);
// The tuner's candidates (the heuristic first) for rows of `row_length` elements.
std::vector<RowConfig> row_candidates(const RowConfig& heuristic, int64_t row_length, const Limits& limits);

// Throw std::invalid_argument for a workgroup size outside 1..1024 (or per_row with one that is not a power
// of two). `subgroup`: the device's Limits::subgroup_size, which the workgroup reductions shuffle across
// (workgroup_reduce.h; the results are the same bits either way); 0 = shared memory alone.
HeavyKernel softmax_kernel(const SoftmaxShape& s, kir::Type t, bool log, const RowConfig& c, uint32_t subgroup = 0);
inline HeavyKernel softmax_kernel(const SoftmaxShape& s, kir::Type t, bool log) {
  return softmax_kernel(s, t, log, softmax_heuristic(s));
}

// cross_entropy's one workgroup: its size (a power of two) is its whole config ("wg=64"); without tuning as
// many invocations as rows, 32 to 256 (the kernel's default, which its name leaves out), and on a GPU up to 1024
// where the device allows it: the single workgroup runs on one core, so the rows each invocation walks through are
// its latency (LeNet's loss at batch 8192 on the H100's cuda:0: 0.056 ms at 256, 0.022 ms at 1024, the tuner's pick).
uint32_t cross_entropy_heuristic(int64_t n);
uint32_t cross_entropy_heuristic(int64_t n, const Limits& limits);
std::vector<uint32_t> cross_entropy_candidates(int64_t n, const Limits& limits);
// Split over workgroups (splits > 1; the kernel's grid): workgroup g adds rows [g R, (g + 1) R) with R = ceil(n /
// splits) into partial_loss[g] (the kernel's output buffer then, splits elements), and cross_entropy_combine_kernel's
// one workgroup adds the partials in a fixed order and divides by n. On a GPU from 2048 rows, one row per invocation
// in workgroups of 256 (cross_entropy_splits): the single workgroup's rows were the step's latency (LeNet's loss at
// batch 8192 on the H100: see docs/PERFORMANCE.md).
uint32_t cross_entropy_splits(int64_t n, const Limits& limits);
HeavyKernel cross_entropy_kernel(int64_t n, int64_t c, kir::Type t, uint32_t wg, uint32_t subgroup = 0,
                                 uint32_t splits = 1);
HeavyKernel cross_entropy_combine_kernel(int64_t n, kir::Type t, uint32_t splits, uint32_t subgroup = 0);
inline HeavyKernel cross_entropy_kernel(int64_t n, int64_t c, kir::Type t) {
  return cross_entropy_kernel(n, c, t, cross_entropy_heuristic(n));
}
HeavyKernel cross_entropy_grad_kernel(int64_t n, int64_t c, kir::Type t, const RowConfig& cfg, uint32_t subgroup = 0);
inline HeavyKernel cross_entropy_grad_kernel(int64_t n, int64_t c, kir::Type t) {
  return cross_entropy_grad_kernel(n, c, t, cross_entropy_grad_heuristic(n, c));
}

}  // namespace spire::lowering::heavy
