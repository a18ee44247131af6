// matmul: square and non-square, a 1x1, a row or two by a matrix (the few-rows kernel), broadcast and batched operands, LeNet's first linear layer, f64, and
// f16/bf16 (accumulated in float32: the 1000-term product is the check that it is).
#include "op_harness/cases.h"

namespace spire::harness {

void matmul_cases(CaseList& cl) {
  Build matmul = [](Graph& g, const std::vector<Value>& x) { return g.matmul(x[0], x[1]); };
  for (auto [a, b] : std::vector<std::pair<Shape, Shape>>{{{7, 33}, {33, 5}},
                                                           {{1, 1}, {1, 1}},
                                                           {{2, 4, 7}, {7, 3}},
                                                           {{3, 33, 17}, {3, 17, 9}},
                                                           {{257, 3}, {3, 2}},
                                                           {{64, 120}, {120, 84}},
                                                           {{1, 96}, {96, 40}},      // a few rows: matvec_kernel.h
                                                           {{2, 1, 70}, {70, 13}}})
    cl.add(OpKind::Matmul, {f32(a), f32(b)}, matmul);
  cl.add(OpKind::Matmul, {f64({7, 33}), f64({33, 5})}, matmul);
  for (DType t : kHalfTypes) {
    cl.add(OpKind::Matmul, {in(t, {64, 120}), in(t, {120, 84})}, matmul);
    cl.add(OpKind::Matmul, {in(t, {3, 33, 17}), in(t, {3, 17, 9})}, matmul);
    cl.add(OpKind::Matmul, {in(t, {4, 1000}, Draw::Uniform, 0, 1), in(t, {1000, 3}, Draw::Uniform, 0, 1)}, matmul);
  }
}

}  // namespace spire::harness
