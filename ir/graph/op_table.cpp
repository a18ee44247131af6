// The op table: gathers the entries of every op family (ir/graph/ops/*.cpp), places the named ops at their
// OpKind and numbers the others after them, and checks the table once, at first use.
#include "ir/graph/op_table.h"
#include "ir/graph/ops_along_one_axis.h"

#include <cctype>
#include <mutex>

#include <fmt/format.h>

namespace spire::graph {
namespace {

void check_entry(const OpInfo& e) {
  auto bad = [&](const char* what) {
    throw std::logic_error(fmt::format("op table entry '{}': {}", e.name, what));
  };
  if (e.name.empty()) bad("has no name");
  const bool leaf = e.category == OpCategory::Leaf;
  if (leaf != (e.arity == 0)) bad("leaves and only leaves take no inputs");
  if (!leaf && !e.shape) bad("has no shape rule");
  if (e.category == OpCategory::Pointwise && (!e.scalar || !e.formula))
    bad("is pointwise but lacks its scalar reference or device formula");
  if (!leaf && e.category != OpCategory::Pointwise && !e.reference) bad("has no float64 reference");
  if (e.forward.why.empty() || e.backward.why.empty()) bad("gives no reason for its tolerance");
  if (e.category == OpCategory::Heavy && !e.cost) bad("is heavy but has no cost rule (its flops are its own)");
  if (e.test.generate && e.category != OpCategory::Pointwise) bad("only pointwise ops generate harness cases");
  if (e.arity >= 0 && e.test.inputs.size() > size_t(e.arity)) bad("its test domain has more inputs than the op");
}

std::vector<OpInfo> build_table() {
  std::vector<OpInfo> named(static_cast<size_t>(kNumNamedOps));
  std::vector<bool> placed(static_cast<size_t>(kNumNamedOps), false);
  std::vector<OpInfo> unnamed;
  for (auto family : {ops::leaves, ops::binary, ops::unary, ops::activations, ops::select_cast, ops::reductions, ops::layout, ops::indexing,
                      ops::matmul_ops, ops::conv2d_ops, ops::pool2d_ops, ops::softmax_ops, ops::argmax_ops, ops::cross_entropy_ops, ops::int8_matmul_ops,
                      ops::backward_only, ops::norm_ops}) {
    for (OpInfo& e : family()) {
      check_entry(e);
      if (e.kind == kUnnamedOp) {
        unnamed.push_back(std::move(e));
        continue;
      }
      const size_t k = size_t(e.kind);
      if (k >= named.size() || placed[k]) throw std::logic_error(fmt::format("op '{}': bad or repeated OpKind", e.name));
      placed[k] = true;
      named[k] = std::move(e);
    }
  }
  for (size_t k = 0; k < placed.size(); ++k)
    if (!placed[k]) throw std::logic_error(fmt::format("OpKind {} has no op table entry", k));
  for (OpInfo& e : unnamed) {
    e.kind = OpKind(named.size());
    named.push_back(std::move(e));
  }
  for (size_t i = 0; i < named.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (named[i].name == named[j].name) throw std::logic_error(fmt::format("op name '{}' defined twice", named[i].name));
  return named;
}

// Custom ops are appended at run time, while op_info() hands out references into the table: reserving room
// for them up front means appending never moves an entry.
constexpr size_t kMaxUserOps = 1024;

std::vector<OpInfo>& mutable_table() {
  static std::vector<OpInfo> t = [] {
    std::vector<OpInfo> built = build_table();
    built.reserve(built.size() + kMaxUserOps);
    return built;
  }();
  return t;
}
const std::vector<OpInfo>& table() { return mutable_table(); }

bool valid_op_name(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// The rules of an entry of category Custom forward to its closures.
const UserOpRules& rules_of(OpKind op) { return *op_info(op).user; }

}  // namespace

OpKind register_user_op(UserOpRules rules) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (!valid_op_name(rules.name))
    throw GraphError(fmt::format("custom op name '{}': use letters, digits and '_', not starting with a digit",
                                 rules.name));
  if (auto existing = op_from_name(rules.name))
    throw GraphError(fmt::format("custom op '{}': the name is taken by {} op", rules.name,
                                 is_user_op(*existing) ? "an earlier custom" : "a built-in"));
  if (rules.arity < 1) throw GraphError(fmt::format("custom op '{}': it must take at least one input", rules.name));
  if (!rules.shape) throw GraphError(fmt::format("custom op '{}': it has no shape rule", rules.name));
  if (!rules.reference) throw GraphError(fmt::format("custom op '{}': it has no CPU reference", rules.name));
  std::vector<OpInfo>& t = mutable_table();
  if (t.size() == t.capacity())
    throw GraphError(fmt::format("custom op '{}': more than {} custom ops", rules.name, kMaxUserOps));
  auto user = std::make_shared<const UserOpRules>(std::move(rules));
  OpInfo e;
  e.kind = OpKind(t.size());
  e.name = user->name;
  e.arity = user->arity;
  e.category = OpCategory::Custom;
  e.shape = [](const ShapeContext& c) { return rules_of(c.op).shape(c); };
  if (user->vjp) e.vjp = [](VjpContext& c) { return rules_of(c.g.node(c.out).op).vjp(c); };
  e.reference = [](const Node& n, std::span<const Tensor* const> in) { return rules_of(n.op).reference(n, in); };
  e.forward = {user->forward_f32, 1e-12, user->tolerance_why};
  e.backward = {user->backward_f32, 1e-12, user->tolerance_why};
  e.user = user;
  check_entry(e);
  t.push_back(std::move(e));
  return t.back().kind;
}

bool is_user_op(OpKind op) { return op_info(op).category == OpCategory::Custom; }

const OpInfo& op_info(OpKind op) {
  const auto& t = table();
  if (size_t(op) >= t.size()) throw GraphError(fmt::format("op number {} is not in the op table", int(op)));
  return t[size_t(op)];
}
std::span<const OpInfo> op_table() { return table(); }
int op_count() { return int(table().size()); }
OpCategory op_category(OpKind op) { return op_info(op).category; }

double op_tolerance(OpKind op, bool backward, DType dtype) {
  if (!is_float(dtype)) return 0;
  const Tolerance& t = backward ? op_info(op).backward : op_info(op).forward;
  if (dtype == DType::F64) return t.f64;
  if (!is_half(dtype)) return t.f32;
  // A half result is computed in float32 and rounded once to its dtype (passes/compute_in_f32.h): an error
  // of at most the unit roundoff u (f16 2^-11, bf16 2^-8) relative to the tensor's scale, so the forward
  // bound is 2u. A gradient is a chain of such ops, each rounding its result before the next reads it: 8u
  // (the op harness's worst case on lavapipe is 2.7u, log_softmax's gradient in f16).
  const double unit = dtype == DType::F16 ? 0x1p-11 : 0x1p-8;
  return t.f32 + (backward ? 8 : 2) * unit;
}

std::string_view op_category_name(OpCategory c) {
  switch (c) {
    case OpCategory::Leaf: return "leaf";
    case OpCategory::Pointwise: return "pointwise";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::Layout: return "layout";
    case OpCategory::Heavy: return "heavy";
    case OpCategory::Custom: return "custom";
  }
  return "?";
}

std::vector<std::string_view> ops_along_one_axis() {
  std::vector<std::string_view> names;
  for (const OpInfo& info : op_table())
    if (info.category == OpCategory::Heavy && info.arity == 1 && info.attrs.size() == 1 && info.attrs[0].name == "axis" &&
        info.attrs[0].kind == AttrKind::Int)
      names.push_back(info.name);
  return names;
}

}  // namespace spire::graph
