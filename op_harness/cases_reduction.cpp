// Reductions: small and large reduced extents (one invocation per output, or one workgroup per output),
// leading, trailing and interleaved axes, everything, nothing, splits in chunks, and f16/bf16.
#include "op_harness/cases.h"

namespace spire::harness {

void reduction_cases(CaseList& cl) {
  struct R { OpKind op; Value (Graph::*fn)(Value, std::vector<int64_t>, bool); };
  const std::vector<R> ops = {{OpKind::Sum, &Graph::sum}, {OpKind::Mean, &Graph::mean}, {OpKind::Max, &Graph::max}};
  struct S { Shape shape; std::vector<int64_t> axes; bool keepdim; };
  // Small and large reduced extents (one invocation per output, or one workgroup per output), leading,
  // trailing and interleaved axes, everything, nothing.
  const std::vector<S> shapes = {
      {{7, 33}, {1}, false},       {{7, 33}, {0}, true},        {{257}, {0}, false},       {{2, 3, 5}, {0, 2}, false},
      {{3, 4, 5, 6}, {1, 3}, true}, {{3, 1000}, {1}, false},    {{1000, 3}, {0}, false},   {{1}, {0}, false},
      {{7, 33}, {}, false},        {{33, 257}, {0, 1}, false},  {{4, 40000}, {1}, false},  // split in chunks
  };
  for (const auto& r : ops) {
    auto fn = r.fn;
    for (const auto& s : shapes) {
      auto axes = s.axes;
      bool keep = s.keepdim;
      cl.add(r.op, {f32(s.shape)}, [fn, axes, keep](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], axes, keep); },
             fmt::format("axes={}{}", ints(axes), keep ? " keepdim" : ""));
    }
    cl.add(r.op, {f64({7, 33})}, [fn](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], {1}, false); },
           "axes=[1]");
    if (r.op != OpKind::Mean)
      cl.add(r.op, {in(DType::I32, {7, 300}, Draw::Integers, -1000, 1000)},
             [fn](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], {1}, false); }, "axes=[1]");
  }
  // Half precision: computed in float32 and rounded once (passes/compute_in_f32.h). 1000 terms of [0, 1]:
  // accumulated in half, the sum would be off by tens of units.
  for (DType t : kHalfTypes)
    for (const auto& r : ops) {
      auto fn = r.fn;
      cl.add(r.op, {in(t, {7, 33})}, [fn](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], {1}, false); }, "axes=[1]");
      cl.add(r.op, {in(t, {3, 1000}, Draw::Uniform, 0, 1)},
             [fn](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], {1}, false); }, "axes=[1]");
    }
}


}  // namespace spire::harness
