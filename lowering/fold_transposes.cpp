#include "lowering/fold_transposes.h"

#include <vector>

#include "lowering/decompose.h"

namespace spire::lowering {

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

class Folder {
 public:
  explicit Folder(const graph::Graph& g) : g_(g), map_(size_t(g.size())), stored_(stored_values(g)), users_(g.users()) {}

  graph::Graph run() {
    for (Value v : g_.values()) map_[size_t(v.id)] = copy(v);
    for (const graph::NamedOutput& o : g_.outputs()) out_.output(o.name, map_[size_t(o.value.id)]);
    for (const graph::StateUpdate& u : g_.state_updates())
      out_.state_update(map_[size_t(u.target.id)], map_[size_t(u.value.id)]);
    return std::move(out_);
  }

 private:
  Value copy(Value v) {
    const graph::Node& n = g_.node(v);
    if (graph::is_leaf(n.op)) return out_.add_leaf(n.op, n.name, n.type, n.attrs);
    std::vector<Value> inputs;
    for (Value in : n.inputs) inputs.push_back(map_[size_t(in.id)]);
    if (n.op != OpKind::Permute) return out_.add_node(n.op, inputs, n.attrs, n.name);

    std::vector<int64_t> perm = n.attrs.get_ints("perm");
    // (a x b)^T = b^T x a^T, when nothing else reads the product. The new product keeps the transpose's name, so
    // an output or state update that read the transpose reads it.
    const graph::Node& orig_in = g_.node(n.inputs[0]);
    if (perm == kSwap2d && orig_in.op == OpKind::Matmul && !stored_[size_t(n.inputs[0].id)] &&
        users_[size_t(n.inputs[0].id)].size() == 1 && g_.type(orig_in.inputs[0]).shape.size() == 2 &&
        g_.type(orig_in.inputs[1]).shape.size() == 2) {
      Value a = map_[size_t(orig_in.inputs[0].id)], b = map_[size_t(orig_in.inputs[1].id)];
      return out_.add_node(OpKind::Matmul, {transposed(b, n.name), transposed(a, n.name)}, {}, n.name);
    }
    // A stored permute otherwise keeps its own node: folding it away could leave an output aliasing a leaf.
    if (stored_[size_t(v.id)]) return out_.add_node(n.op, inputs, n.attrs, n.name);
    Value src = inputs[0];
    const graph::Node& inner = out_.node(src);
    if (inner.op == OpKind::Permute) {
      // permute(permute(x, q), p): result dim i is x's dim q[p[i]].
      const std::vector<int64_t> q = inner.attrs.get_ints("perm");
      std::vector<int64_t> composed(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) composed[i] = q[size_t(perm[i])];
      perm = composed;
      src = inner.inputs[0];
    }
    if (is_identity(perm)) return src;
    return out_.add_node(OpKind::Permute, {src}, {{"perm", perm}}, n.name);
  }

  // x^T in the output graph: the input of a transpose when x is one, else a new transpose.
  Value transposed(Value x, const std::string& for_node) {
    const graph::Node& xn = out_.node(x);
    if (xn.op == OpKind::Permute && xn.attrs.get_ints("perm") == kSwap2d) return xn.inputs[0];
    return out_.add_node(OpKind::Permute, {x}, {{"perm", kSwap2d}}, fresh_name(g_, out_, for_node + ".operand_t"));
  }

  const graph::Graph& g_;
  graph::Graph out_;
  std::vector<Value> map_;
  std::vector<bool> stored_;
  std::vector<std::vector<Value>> users_;
};

}  // namespace

graph::Graph fold_transposes(const graph::Graph& g) { return Folder(g).run(); }

}  // namespace spire::lowering
