// Half precision (f16 and bf16): every generated pointwise op at one shape, the reductions, matmul,
// convolution, the softmax family, cross-entropy, a permute and the casts to and from half. Their ops compute
// in float32 and round the result (passes/compute_in_f32.h), so the sums of a reduction, matmul or
// convolution accumulate in float32: a sum over 1000 elements is the check that they do. Tolerances are the
// half ones of op_table.h. A device without the dtype's feature skips the case with a note.
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

void reductions(CaseList& cl, DType t) {
  struct R { OpKind op; Value (Graph::*fn)(Value, std::vector<int64_t>, bool); };
  for (R r : {R{OpKind::Sum, &Graph::sum}, R{OpKind::Mean, &Graph::mean}, R{OpKind::Max, &Graph::max}}) {
    auto fn = r.fn;
    cl.add(r.op, {in(t, {7, 33})}, [fn](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], {1}, false); }, "axes=[1]");
    // 1000 terms of [0, 1]: accumulated in half, the sum would be off by tens of units.
    cl.add(r.op, {in(t, {3, 1000}, Draw::Uniform, 0, 1)},
           [fn](Graph& g, const std::vector<Value>& x) { return (g.*fn)(x[0], {1}, false); }, "axes=[1]");
  }
}

void heavy(CaseList& cl, DType t) {
  Build matmul = [](Graph& g, const std::vector<Value>& x) { return g.matmul(x[0], x[1]); };
  cl.add(OpKind::Matmul, {in(t, {64, 120}), in(t, {120, 84})}, matmul);
  cl.add(OpKind::Matmul, {in(t, {3, 33, 17}), in(t, {3, 17, 9})}, matmul);
  cl.add(OpKind::Matmul, {in(t, {4, 1000}, Draw::Uniform, 0, 1), in(t, {1000, 3}, Draw::Uniform, 0, 1)}, matmul);

  auto conv = [&](Shape x, Shape w, graph::Conv2dOptions o) {
    cl.add(OpKind::Conv2d, {in(t, x), in(t, w)}, [o](Graph& g, const std::vector<Value>& v) { return g.conv2d(v[0], v[1], o); },
           fmt::format("stride={} padding={}", ints(o.stride), ints(o.padding)));
  };
  conv({2, 1, 28, 28}, {6, 1, 5, 5}, {.padding = {2, 2}});  // LeNet's first layer
  conv({2, 3, 9, 9}, {4, 3, 3, 3}, {.stride = {2, 2}, .padding = {1, 1}});

  for (OpKind op : {OpKind::Softmax, OpKind::LogSoftmax})
    cl.add(op, {in(t, {7, 33}, Draw::Uniform, -5, 5)},
           [op](Graph& g, const std::vector<Value>& v) { return op == OpKind::Softmax ? g.softmax(v[0], 1) : g.log_softmax(v[0], 1); },
           "axis=1");
  cl.add(OpKind::CrossEntropy, {in(t, {64, 10}, Draw::Uniform, -3, 3), in(DType::I64, {64}, Draw::Integers, 0, 9)},
         [](Graph& g, const std::vector<Value>& v) { return g.cross_entropy(v[0], v[1]); });

  cl.add(OpKind::Permute, {in(t, {2, 3, 5})}, [](Graph& g, const std::vector<Value>& x) { return g.permute(x[0], {2, 0, 1}); },
         "perm=[2,0,1]");
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

void half_cases(CaseList& cl) {
  for (DType t : {DType::F16, DType::BF16}) {
    pointwise(cl, t);
    reductions(cl, t);
    heavy(cl, t);
    casts(cl, t);
  }
}

}  // namespace spire::harness
