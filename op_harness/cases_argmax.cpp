// argmax: rows along the last and the first axis, a middle axis (inner stride > 1), rows longer than a workgroup,
// ties (whole numbers from a few values) with the first and the last position, keepdim, f64, f16 and bf16. Positions
// are exact: every device must give the reference's.
#include "op_harness/cases.h"

namespace spire::harness {

void argmax_cases(CaseList& cl) {
  auto add = [&](OpInput x, int64_t axis, bool keepdim = false, bool last = false) {
    cl.add("argmax", {std::move(x)},
           {{"axis", axis}, {"keepdim", keepdim}, {"select_last_index", last}},
           fmt::format("axis={}{}{}", axis, keepdim ? " keepdim" : "", last ? " last" : ""), false);
  };
  add(f32({7, 33}, -5, 5), 1);
  add(f32({7, 33}, -5, 5), 0, true);
  add(f32({2, 5, 3}, -5, 5), 1);
  add(f32({3, 3000}, -5, 5), 1);
  for (bool last : {false, true}) {
    add(in(DType::F32, {6, 40}, Draw::Integers, -3, 3), 1, false, last);
    add(in(DType::F32, {2, 2500}, Draw::Integers, -3, 3), 1, false, last);
  }
  // Rows of more than two parts (kernels/argmax_kernel.h: a GPU chooses in each part, then among the parts), ties
  // across parts included (integers from -3 to 3), the last part shorter.
  for (bool last : {false, true}) add(in(DType::F32, {2, 9001}, Draw::Integers, -3, 3), 1, false, last);
  add(f32({3, 12289}, -5, 5), 1);
  add(f64({7, 33}, -5, 5), 1);
  for (DType t : kHalfTypes) add(in(t, {7, 300}, Draw::Uniform, -5, 5), 1);
  for (DType t : kHalfTypes) add(in(t, {1, 8200}, Draw::Uniform, -5, 5), 1);
}

}  // namespace spire::harness
