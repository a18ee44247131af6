// softmax and log_softmax: rows along the last and the first axis, a middle axis (inner stride > 1), one long
// row (a workgroup per row), f64, and f16/bf16 (computed in float32, rounded once).
#include "op_harness/cases.h"

namespace spire::harness {

void softmax_cases(CaseList& cl) {
  for (const char* op : {"softmax", "log_softmax"}) {
    auto add = [&](OpInput x, int64_t axis) { cl.add(op, {std::move(x)}, {{"axis", axis}}, fmt::format("axis={}", axis)); };
    add(f32({7, 33}, -5, 5), 1);
    add(f32({7, 33}, -5, 5), 0);
    add(f32({2, 3, 5}, -5, 5), 1);
    add(f32({1, 257}, -5, 5), 1);
    add(f64({7, 33}, -5, 5), 1);
    for (DType t : kHalfTypes) add(in(t, {7, 33}, Draw::Uniform, -5, 5), 1);
  }
}

}  // namespace spire::harness
