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

#include "lowering/heavy_kernels/heavy_kernel.h"

namespace spire::lowering::heavy {

struct SoftmaxShape {
  int64_t outer = 1, axis = 1, inner = 1;  // [outer, axis, inner] after merging the dims around the axis
};

// From a shape and the (non-negative) axis; throws std::invalid_argument if the axis is out of range.
SoftmaxShape softmax_shape(const std::vector<int64_t>& shape, int64_t axis);

// A workgroup per row from this axis length (or class count) on; one invocation per row (or element) below.
inline constexpr int64_t kSoftmaxWorkgroupRowFrom = 256;

HeavyKernel softmax_kernel(const SoftmaxShape& s, kir::Type t, bool log);

HeavyKernel cross_entropy_kernel(int64_t n, int64_t c, kir::Type t);
HeavyKernel cross_entropy_grad_kernel(int64_t n, int64_t c, kir::Type t);

}  // namespace spire::lowering::heavy
