// where(cond, a, b) and cast: pointwise ops whose inputs or result change dtype.
#include "ir/graph/ops/common.h"

namespace spire::graph::ops {

namespace {

double cast_ref(const Node& n, std::span<const double> x) {
  const DType to = n.type.dtype;
  const double v = x[0];
  if (is_int(to) && !std::isfinite(v)) eval::fail(n, fmt::format("cannot cast {} to {}", v, dtype_name(to)));
  // To int: truncation toward zero; to bool: v != 0 (NaN is true, as in PyTorch); between floats the value is
  // kept, and the evaluator rounds it to the compute precision like every float result.
  return to == DType::Bool ? double(v != 0) : is_int(to) ? std::trunc(v) : v;
}

Val cast_formula(const PointwiseEmit& e) {
  const DType from = e.input_dtypes[0];
  if (e.node.type.dtype == DType::Bool) return from_bool(e.kb, e.x[0] != kir::like(e.x[0], 0));
  if (from == DType::Bool) return kir::select(as_bool(e.x[0]), e.kb.constant(e.out, 1), e.kb.constant(e.out, 0));
  return kir::cast(e.x[0], e.out);
}

}  // namespace

std::vector<OpInfo> select_cast() {
  return {
      // Cases for both in op_harness/cases_pointwise.cpp (bool conditions, every dtype pair).
      {.kind = OpKind::Where, .name = "where", .arity = 3, .category = OpCategory::Pointwise, .shape = S::where,
       .vjp = V::where,
       .scalar = [](const Node&, std::span<const double> x) { return x[0] != 0 ? x[1] : x[2]; },
       .formula = [](const PointwiseEmit& e) { return kir::select(as_bool(e.x[0]), e.x[1], e.x[2]); },
       .forward = kCopy, .backward = kSumBackward},
      {.kind = OpKind::Cast, .name = "cast", .arity = 1, .attrs = {{"to", K::String}},
       .category = OpCategory::Pointwise, .shape = S::cast, .vjp = V::cast, .scalar = cast_ref,
       .formula = cast_formula,
       .forward = {1e-7, 0, "float -> float rounds once (f64 -> f32); float -> int truncates exactly"},
       .backward = kExact},
  };
}

}  // namespace spire::graph::ops
