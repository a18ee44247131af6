// cross_entropy with i32 and i64 labels, one row, many rows (the split sums), many classes, f64, f16 and bf16
// logits; its gradient checked directly as a forward op.
#include "op_harness/cases.h"

namespace spire::harness {

void cross_entropy_cases(CaseList& cl) {
  auto loss = [&](OpInput logits, OpInput labels) { cl.add("cross_entropy", {std::move(logits), std::move(labels)}, {}); };
  loss(f32({7, 10}, -3, 3), in(DType::I64, {7}, Draw::Integers, 0, 9));
  loss(f32({1, 3}, -3, 3), in(DType::I32, {1}, Draw::Integers, 0, 2));
  loss(f32({64, 10}, -3, 3), in(DType::I64, {64}, Draw::Integers, 0, 9));
  loss(f32({33, 257}, -3, 3), in(DType::I32, {33}, Draw::Integers, 0, 256));
  loss(f64({7, 10}, -3, 3), in(DType::I64, {7}, Draw::Integers, 0, 9));
  for (DType t : kHalfTypes) loss(in(t, {64, 10}, Draw::Uniform, -3, 3), in(DType::I64, {64}, Draw::Integers, 0, 9));

  // Backward-only, so no gradient of its own to check.
  auto grad = [&](OpInput logits, OpInput labels) {
    cl.add("cross_entropy_grad", {f32({}), std::move(logits), std::move(labels)}, {}, "", false);
  };
  grad(f32({7, 10}, -3, 3), in(DType::I64, {7}, Draw::Integers, 0, 9));
  grad(f32({64, 10}, -3, 3), in(DType::I32, {64}, Draw::Integers, 0, 9));
}

}  // namespace spire::harness
