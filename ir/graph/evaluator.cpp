// The reference evaluator's driver: checks the caller's tensors against the graph's leaves, runs every node
// the outputs and state updates need in topological order, applies the compute precision, and collects the
// results. The op semantics live in eval_*.cpp, one file per family.
#include "ir/graph/evaluator.h"

#include <array>
#include <optional>

#include <fmt/format.h>

#include "ir/graph/eval_ops.h"
#include "ir/graph/op_table.h"

namespace spire::graph {

namespace {

using eval::Inputs;

// Rounds a freshly computed value of `dtype` to what the evaluation holds: integer and bool results to their
// dtype (exact either way), float results to float when computing in F32. In F64 a float value stays a double
// even when its declared dtype is f32: the oracle rounds only at the end.
void apply_precision(Tensor& t, DType compute) {
  if (!is_float(t.dtype)) {
    t.round_to_dtype();
  } else if (compute == DType::F32) {
    for (double& v : t.data) v = round_to(DType::F32, v);
  }
}

const char* leaf_kind(OpKind op) {
  switch (op) {
    case OpKind::Input: return "input";
    case OpKind::Parameter: return "parameter";
    case OpKind::State: return "state";
    default: return "leaf";
  }
}

// The caller's tensor for an Input, Parameter or State leaf, checked against the declaration.
Tensor feed_leaf(const Node& n, const std::map<std::string, Tensor>& inputs) {
  auto it = inputs.find(n.name);
  if (it == inputs.end())
    throw GraphError(fmt::format("evaluate: missing {} '{}' ({}): no tensor of that name was given",
                                 leaf_kind(n.op), n.name, n.type.to_string()));
  const Tensor& t = it->second;
  if (t.dtype != n.type.dtype || t.shape != n.type.shape)
    throw GraphError(fmt::format("evaluate: {} '{}' expects {}, got {}", leaf_kind(n.op), n.name,
                                 n.type.to_string(), t.type().to_string()));
  if (t.numel() != n.type.numel())
    throw GraphError(fmt::format("evaluate: {} '{}' ({}) holds {} values, its shape has {} elements",
                                 leaf_kind(n.op), n.name, n.type.to_string(), t.numel(), n.type.numel()));
  Tensor copy = t;
  copy.round_to_dtype();  // a tensor built by hand may hold more precision than its dtype
  return copy;
}

// Every op's reference is its op table entry: the scalar reference of a pointwise op (walked over the
// broadcast result), or the whole-op reference of the others.
Tensor run_op(const Node& n, Inputs in) {
  const OpInfo& info = op_info(n.op);
  if (info.category == OpCategory::Pointwise) return eval::pointwise(n, in);
  if (!info.reference) eval::fail(n, "the evaluator has no implementation for this op");
  return info.reference(n, in);
}

}  // namespace

std::map<std::string, Tensor> evaluate(const Graph& g, const std::map<std::string, Tensor>& inputs, DType compute) {
  if (compute != DType::F32 && compute != DType::F64)
    throw GraphError(fmt::format("evaluate: compute precision must be f32 or f64, got {}", dtype_name(compute)));

  const int32_t count = g.size();

  // Which values the outputs and state updates need, and how many times each is still to be read (so that
  // intermediates are freed after their last use; a graph's roots are pinned by one extra use).
  std::vector<int32_t> uses_left(size_t(count), 0);
  std::vector<char> needed(size_t(count), 0);
  for (const NamedOutput& o : g.outputs()) needed[size_t(o.value.id)] = 1, ++uses_left[size_t(o.value.id)];
  for (const StateUpdate& u : g.state_updates()) needed[size_t(u.value.id)] = 1, ++uses_left[size_t(u.value.id)];
  for (int32_t id = count; id-- > 0;) {
    if (!needed[size_t(id)]) continue;
    for (Value v : g.node(id).inputs) needed[size_t(v.id)] = 1, ++uses_left[size_t(v.id)];
  }

  // Every fed leaf is checked, used or not: the contract is that the caller feeds them all.
  std::vector<std::optional<Tensor>> values(static_cast<size_t>(count));
  for (int32_t id = 0; id < count; ++id) {
    const Node& n = g.node(id);
    if (n.op == OpKind::Input || n.op == OpKind::Parameter || n.op == OpKind::State) {
      Tensor t = feed_leaf(n, inputs);
      if (needed[size_t(id)]) {
        apply_precision(t, compute);
        values[size_t(id)] = std::move(t);
      }
    }
  }

  std::vector<const Tensor*> args;
  for (int32_t id = 0; id < count; ++id) {
    if (!needed[size_t(id)]) continue;
    const Node& n = g.node(id);
    if (n.op == OpKind::Input || n.op == OpKind::Parameter || n.op == OpKind::State) continue;

    Tensor result;
    if (n.op == OpKind::Constant) {
      result = Tensor(n.type.dtype, n.type.shape, n.attrs.get_float("value"));
    } else {
      args.clear();
      for (Value v : n.inputs) args.push_back(&*values[size_t(v.id)]);
      result = run_op(n, Inputs(args.data(), args.size()));
      if (result.dtype != n.type.dtype || result.shape != n.type.shape || result.numel() != n.type.numel())
        eval::fail(n, fmt::format("internal error: the evaluator produced {} ({} values) for a node of type {}",
                                  result.type().to_string(), result.numel(), n.type.to_string()));
    }
    apply_precision(result, compute);
    values[size_t(id)] = std::move(result);

    for (Value v : n.inputs)
      if (--uses_left[size_t(v.id)] == 0) values[size_t(v.id)].reset();
  }

  std::map<std::string, Tensor> results;
  auto finished = [&](Value v) {
    Tensor t = *values[size_t(v.id)];
    t.round_to_dtype();
    return t;
  };
  for (const NamedOutput& o : g.outputs()) results[o.name] = finished(o.value);
  for (const StateUpdate& u : g.state_updates()) results[g.node(u.target).name] = finished(u.value);
  return results;
}

namespace eval {

std::string describe(const Node& n) { return fmt::format("{} '{}'", op_name(n.op), n.name); }

void fail(const Node& n, const std::string& message) {
  throw GraphError(fmt::format("{}: {}", describe(n), message));
}

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) strides[i - 1] = strides[i] * s[i];
  return strides;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  if (in.size() > out.size())
    throw GraphError(fmt::format("cannot broadcast {} to the lower rank {}", shape_to_string(in), shape_to_string(out)));
  std::vector<int64_t> in_strides = row_major_strides(in);
  std::vector<int64_t> result(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    result[lead + i] = (in[i] == 1 && out[lead + i] != 1) ? 0 : in_strides[i];
  return result;
}

Tensor result_of(const Node& n) { return Tensor(n.type.dtype, n.type.shape, 0.0); }

}  // namespace eval

}  // namespace spire::graph
