// Half precision (f16 and bf16) for the ops without a lowering entry: every generated pointwise op at one shape
// and the casts to and from half. (The other families list their half cases beside their f32 ones.) Their ops
// compute in float32 and round the result (passes/compute_in_f32.h). Tolerances are the half ones of
// op_table.h. A device without the dtype's feature skips the case with a note.
#include "ir/graph/op_table.h"
#include "op_harness/cases.h"

namespace spire::harness {

namespace {

void pointwise(CaseList& cl, DType t) {
  for (const graph::OpInfo& op : graph::op_table()) {
    if (!op.test.generate) continue;
    std::vector<OpInput> inputs;
    for (int64_t k = 0; k < op.arity; ++k) {
      graph::InputDomain r = size_t(k) < op.test.inputs.size() ? op.test.inputs[size_t(k)] : graph::InputDomain{};
      inputs.push_back(in(t, {7, 33}, r.away_from_zero ? Draw::AwayFromZero : Draw::Uniform, r.lo, r.hi));
    }
    const OpKind kind = op.kind;
    const graph::Attrs attrs = op.test.attrs;
    cl.add(kind, std::move(inputs), [kind, attrs](Graph& g, const std::vector<Value>& x) { return g.add_node(kind, x, attrs); },
           "", op.test.backward);
  }
}

void casts(CaseList& cl, DType t) {
  auto cast = [&](OpInput from, DType to) {
    cl.add(OpKind::Cast, {from}, [to](Graph& g, const std::vector<Value>& x) { return g.cast(x[0], to); },
           fmt::format("to={}", graph::dtype_name(to)));
  };
  cast(f32({7, 33}, -1000, 1000), t);
  cast(in(t, {7, 33}, Draw::Uniform, -1000, 1000), DType::F32);
  cast(in(t, {7, 33}, Draw::Uniform, -100, 100), DType::I32);  // truncation toward zero
  cast(in(DType::I32, {7, 33}, Draw::Integers, -200, 200), t);  // exact in both halves
  cast(in(t, {7, 33}, Draw::Uniform, -100, 100), t == DType::F16 ? DType::BF16 : DType::F16);
}

}  // namespace

void half_pointwise_cases(CaseList& cl) {
  for (DType t : kHalfTypes) {
    pointwise(cl, t);
    casts(cl, t);
  }
}

}  // namespace spire::harness
