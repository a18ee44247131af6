// matmul_int8_weight: one row and blocks of rows (a decoder's token and a prompt, the last block partial), K a
// multiple of four and not (the last word's padding bytes ignored), a batch of x, f64, and f16/bf16 (computed in
// float32, rounded once). The weights are random words: every int8 value, -128 included, appears.
#include "op_harness/cases.h"

namespace spire::harness {

void int8_matmul_cases(CaseList& cl) {
  auto add = [&](OpInput x, int64_t n, const char* path) {
    const int64_t k = x.type.shape.back();
    const DType t = x.type.dtype;
    cl.add("matmul_int8_weight",
           {std::move(x), in(DType::I32, {n, (k + 3) / 4}, Draw::Integers, -2147483648.0, 2147483647.0),
            in(t, {n}, Draw::Uniform, 1e-3, 2e-2)},
           {}, path, /*backward=*/false);
  };
  add(f32({1, 64}), 33, "one row");
  add(f32({1, 1, 770}), 5, "several words an invocation, K%4=2");
  add(f32({7, 13}), 9, "two blocks of rows, the second partial, K%4=1");
  add(f32({2, 3, 32}), 17, "batched x");
  add(f64({5, 31}), 6, "f64");
  for (DType t : kHalfTypes) add(in(t, {3, 36}, Draw::Uniform, -1, 1), 8, "half");
}

}  // namespace spire::harness
