// The cases of the custom ops registered so far (graph::register_user_op): each case its author listed, or one
// f32[7,33] case per input, drawn from the author's range. Built on each call, since ops arrive at run time.
#include "ir/graph/op_table.h"
#include "op_harness/cases.h"

namespace spire::harness {

std::vector<OpCase> custom_op_cases() {
  CaseList cl;
  for (const graph::OpInfo& op : graph::op_table()) {
    if (op.category != graph::OpCategory::Custom) continue;
    const graph::UserOpRules& rules = *op.user;
    std::vector<std::vector<graph::TensorType>> cases = rules.test_cases;
    if (cases.empty()) cases.push_back(std::vector<graph::TensorType>(size_t(op.arity), {DType::F32, {7, 33}}));
    const OpKind kind = op.kind;
    Build build = [kind](Graph& g, const std::vector<Value>& x) { return g.add_node(kind, x, {}); };
    for (const auto& types : cases) {
      std::vector<OpInput> inputs;
      for (const graph::TensorType& t : types) inputs.push_back(in(t.dtype, t.shape, Draw::Uniform, rules.test_domain.lo, rules.test_domain.hi));
      cl.add(kind, std::move(inputs), build, "", bool(op.vjp));
    }
  }
  return cl.take();
}

}  // namespace spire::harness
