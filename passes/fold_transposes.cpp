#include "passes/fold_transposes.h"

#include <vector>

#include "passes/rebuild.h"

namespace spire::passes {

namespace {

using graph::OpKind;
using graph::Value;

const std::vector<int64_t> kSwap2d{1, 0};

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return false;
  return true;
}

// Values that must land in memory under their own name: graph outputs and state updates' new values.
std::vector<bool> stored_values(const graph::Graph& g) {
  std::vector<bool> stored(size_t(g.size()), false);
  for (const auto& o : g.outputs()) stored[size_t(o.value.id)] = true;
  for (const auto& u : g.state_updates()) stored[size_t(u.value.id)] = true;
  return stored;
}

// x^T in `out`: the input of a transpose when x is one, else a new transpose.
Value transposed(const graph::Graph& g, graph::Graph& out, Value x, const std::string& for_node) {
  const graph::Node& xn = out.node(x);
  if (xn.op == OpKind::Permute && xn.attrs.get_ints("perm") == kSwap2d) return xn.inputs[0];
  return out.add_node(OpKind::Permute, {x}, {{"perm", kSwap2d}}, fresh_name(g, out, for_node + ".operand_t"));
}

}  // namespace

graph::Graph fold_transposes(const graph::Graph& g) {
  const std::vector<bool> stored = stored_values(g);
  const std::vector<std::vector<Value>> users = g.users();
  return rebuild(g, [&](graph::Graph& out, Value v, std::vector<Value> inputs, const std::vector<Value>& map) {
    const graph::Node& n = g.node(v);
    if (n.op != OpKind::Permute) return out.add_node(n.op, inputs, n.attrs, n.name);
    std::vector<int64_t> perm = n.attrs.get_ints("perm");
    // (a x b)^T = b^T x a^T, when nothing else reads the product. The new product keeps the transpose's name, so
    // an output or state update that read the transpose reads it.
    const graph::Node& orig_in = g.node(n.inputs[0]);
    if (perm == kSwap2d && orig_in.op == OpKind::Matmul && !stored[size_t(n.inputs[0].id)] &&
        users[size_t(n.inputs[0].id)].size() == 1 && g.type(orig_in.inputs[0]).shape.size() == 2 &&
        g.type(orig_in.inputs[1]).shape.size() == 2) {
      Value a = map[size_t(orig_in.inputs[0].id)], b = map[size_t(orig_in.inputs[1].id)];
      return out.add_node(OpKind::Matmul, {transposed(g, out, b, n.name), transposed(g, out, a, n.name)}, {}, n.name);
    }
    // A stored permute otherwise keeps its own node: folding it away could leave an output aliasing a leaf.
    if (stored[size_t(v.id)]) return out.add_node(n.op, inputs, n.attrs, n.name);
    Value src = inputs[0];
    const graph::Node& inner = out.node(src);
    if (inner.op == OpKind::Permute) {
      // permute(permute(x, q), p): result dim i is x's dim q[p[i]].
      const std::vector<int64_t> q = inner.attrs.get_ints("perm");
      std::vector<int64_t> composed(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) composed[i] = q[size_t(perm[i])];
      perm = composed;
      src = inner.inputs[0];
    }
    if (is_identity(perm)) return src;
    return out.add_node(OpKind::Permute, {src}, {{"perm", perm}}, n.name);
  });
}

}  // namespace spire::passes
