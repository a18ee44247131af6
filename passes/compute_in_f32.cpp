#include "passes/compute_in_f32.h"
#include "passes/rebuild.h"

#include <optional>
#include <vector>


namespace spire::passes {

namespace {

using graph::DType;
using graph::OpKind;
using graph::Value;

bool moves_elements_only(OpKind op) {
  return op == OpKind::Reshape || op == OpKind::Flatten || op == OpKind::Permute || op == OpKind::BroadcastTo;
}

// Ops that read their operands' cast up in place (fuse.h, absorbed_upcast) when they are the cast's only readers.
bool reads_half_in_place(OpKind op) { return op == OpKind::Matmul || op == OpKind::Conv2d; }

class Rewriter {
 public:
  explicit Rewriter(const graph::Graph& g) : g_(g), users_(g.users()), map_(size_t(g.size())), up_(size_t(g.size())) {}

  graph::Graph run() {
    // Leaves first (in their order), each half one's cast up right after it: an op's constant created after a heavy op
    // (an imported convolution's bias) is then cast before the heavy op runs, which an epilogue needs (fuse.h).
    for (Value v : g_.values())
      if (graph::is_leaf(g_.node(v).op)) map_[size_t(v.id)] = rewrite(v);
    for (Value v : g_.values())
      if (!graph::is_leaf(g_.node(v).op)) map_[size_t(v.id)] = rewrite(v);
    for (const graph::NamedOutput& o : g_.outputs()) out_.output(o.name, map_[size_t(o.value.id)]);
    for (const graph::StateUpdate& u : g_.state_updates())
      out_.state_update(map_[size_t(u.target.id)], map_[size_t(u.value.id)]);
    return std::move(out_);
  }

 private:
  Value rewrite(Value v) {
    const graph::Node& n = g_.node(v);
    if (graph::is_leaf(n.op)) {
      map_[size_t(v.id)] = out_.add_leaf(n.op, n.name, n.type, n.attrs);
      // A half leaf that ops will read in f32 (directly, or after moves such as a bias's reshape to [1, C, 1, 1]) is
      // cast right after it, ahead of every op: a matmul or convolution can then take the ops that read the cast as
      // its epilogue (fuse.h wants an epilogue's inputs computed before the heavy op).
      if (graph::is_half(n.type.dtype) && read_in_f32(v)) in_f32(v);
      return map_[size_t(v.id)];
    }
    std::vector<Value> inputs;
    bool touches_half = graph::is_half(n.type.dtype);
    for (Value in : n.inputs) {
      inputs.push_back(map_[size_t(in.id)]);
      touches_half |= graph::is_half(g_.type(in).dtype);
    }
    if (!touches_half || moves_elements_only(n.op)) return out_.add_node(n.op, inputs, n.attrs, n.name);
    if (n.op == OpKind::Cast) {
      const DType from = g_.type(n.inputs[0]).dtype, to = n.type.dtype;
      if (from == DType::F32 || to == DType::F32) return out_.add_node(n.op, inputs, n.attrs, n.name);
      return out_.add_node(OpKind::Cast, {in_f32(n.inputs[0])}, n.attrs, n.name);
    }
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (graph::is_half(g_.type(n.inputs[i]).dtype))
        inputs[i] = own_cast(n.op, n.inputs[i]) ? cast_up(n.inputs[i]) : in_f32(n.inputs[i]);
    if (!graph::is_half(n.type.dtype)) return out_.add_node(n.op, inputs, n.attrs, n.name);
    const Value wide = out_.add_node(n.op, inputs, n.attrs, fresh_name(g_, out_, n.name + ".f32"));
    return out_.add_node(OpKind::Cast, {wide}, {{"to", std::string(graph::dtype_name(n.type.dtype))}}, n.name);
  }

  // Whether an op reading the half value `v` gets a cast up of its own rather than the one every other reader shares:
  // a matmul or convolution reading v itself or a reshape of it (an alias of the same words; not a permute or a
  // broadcast, which move elements), so that fusion absorbs the cast into it (the product reads v in place) whatever
  // else reads v. A residual block's input, read by the next convolution and by the block's add, is read by the
  // convolution as 16-bit words (on tensor cores where the device has them) instead of through an f32 copy; a
  // classifier's pooled features, flattened for its fully connected layer, need no launch to be cast up.
  bool own_cast(OpKind op, Value v) const {
    const OpKind moved_by = g_.node(v).op;
    return reads_half_in_place(op) &&
           (!moves_elements_only(moved_by) || moved_by == OpKind::Reshape || moved_by == OpKind::Flatten);
  }

  // Whether an op other than a cast reads `v` through the shared cast up, directly or through element moves (which
  // stay in half).
  bool read_in_f32(Value v) const {
    for (Value u : users_[size_t(v.id)]) {
      const OpKind op = g_.node(u).op;
      if (op == OpKind::Cast || own_cast(op, v)) continue;
      if (!moves_elements_only(op) || read_in_f32(u)) return true;
    }
    return false;
  }

  Value cast_up(Value v) {
    return out_.add_node(OpKind::Cast, {map_[size_t(v.id)]}, {{"to", std::string("f32")}},
                         fresh_name(g_, out_, g_.node(v).name + ".to_f32"));
  }

  // The original value `v` (of a half dtype) cast up to f32 in the output graph, once however many ops read it.
  // A value that only moves the elements of another half value is moved again after the cast instead: the
  // cast reads the source, and the move stays next to its reader, where matmul reads a transpose in place
  // (fuse.h, absorbed_transpose) and pointwise kernels fold reshapes into their indexing.
  Value in_f32(Value v) {
    std::optional<Value>& up = up_[size_t(v.id)];
    if (up) return *up;
    const graph::Node& n = g_.node(v);
    if (moves_elements_only(n.op) && n.inputs.size() == 1 && graph::is_half(g_.type(n.inputs[0]).dtype))
      up = out_.add_node(n.op, {in_f32(n.inputs[0])}, n.attrs, fresh_name(g_, out_, n.name + ".to_f32"));
    else
      up = cast_up(v);
    return *up;
  }

  const graph::Graph& g_;
  std::vector<std::vector<Value>> users_;
  graph::Graph out_;
  std::vector<Value> map_;
  std::vector<std::optional<Value>> up_;
};

}  // namespace

graph::Graph compute_in_f32(const graph::Graph& g) {
  for (Value v : g.values())
    if (graph::is_half(g.type(v).dtype)) return Rewriter(g).run();
  return g;
}

}  // namespace spire::passes
