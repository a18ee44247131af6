#include "passes/compute_in_f32.h"
#include "passes/rebuild.h"
#include "passes/rewrite.h"
#include "ir/graph/op_table.h"

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

// Ops that copy elements from their data inputs to their result, choosing which by index inputs: slice, concat,
// gather, write_at. Where every data input is of the result's half dtype they copy 16-bit words as they are, so they
// stay in half (a decoder's half cache is written in place by write_at, and attention's keys cut from a half
// projection by slices); with any data input of another float type they compute in f32 like any op.
bool copies_words(const graph::Graph& g, const graph::Node& n) {
  const std::string_view op = graph::op_name(n.op);
  if (op != "slice" && op != "concat" && op != "gather" && op != "write_at") return false;
  for (Value in : n.inputs) {
    const DType t = g.type(in).dtype;
    if (t != n.type.dtype && graph::is_float(t)) return false;
  }
  return true;
}

// Whether node n keeps its half dtype: it moves or copies 16-bit words and computes nothing.
bool stays_half(const graph::Graph& g, const graph::Node& n) { return moves_elements_only(n.op) || copies_words(g, n); }

// Ops that read their operands' cast up in place (fuse.h, absorbed_upcast) when they are the cast's only readers.
bool reads_half_in_place(OpKind op) { return op == OpKind::Matmul || op == OpKind::Conv2d; }

class Rewriter {
 public:
  explicit Rewriter(const graph::Graph& g) : g_(g), users_(g.users()), map_(size_t(g.size())), up_(size_t(g.size())) {}

  graph::Graph run() {
    // Leaves first (in their order), each half one's cast up right after it: an op's constant created after a heavy op
    // (an imported convolution's bias) is then cast before the heavy op runs, which an epilogue needs (fuse.h).
    // So is a leaf's cast to half (the precision policies' f32 weights stored in half, half_storage.h).
    for (Value v : g_.values())
      if (graph::is_leaf(g_.node(v).op)) map_[size_t(v.id)] = rewrite(v);
    for (Value v : g_.values())
      if (casts_leaf(v)) {
        map_[size_t(v.id)] = rewrite(v);
        if (graph::is_half(g_.type(v).dtype) && read_in_f32(v)) in_f32(v);
      }
    for (Value v : g_.values())
      if (!graph::is_leaf(g_.node(v).op) && !casts_leaf(v)) map_[size_t(v.id)] = rewrite(v);
    for (const graph::NamedOutput& o : g_.outputs()) out_.output(o.name, map_[size_t(o.value.id)]);
    for (const graph::StateUpdate& u : g_.state_updates())
      out_.state_update(map_[size_t(u.target.id)], map_[size_t(u.value.id)]);
    return std::move(out_);
  }

 private:
  bool casts_leaf(Value v) const {
    const graph::Node& n = g_.node(v);
    return n.op == OpKind::Cast && graph::is_leaf(g_.node(n.inputs[0]).op);
  }

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
    if (!touches_half || stays_half(g_, n)) return out_.add_node(n.op, inputs, n.attrs, n.name);
    if (n.op == OpKind::Cast) {
      const DType from = g_.type(n.inputs[0]).dtype, to = n.type.dtype;
      if (from == to) return inputs[0];  // (a cast to f32 that half storage made a cast from half to half)
      // A half parameter's move (a weight's transpose) cast up: moved after the cast, as in_f32 moves it, so that a
      // product reads the transpose of the half words in place (fuse.h: a permute of an upcast) rather than a moved
      // copy that the plan would keep beside the weight.
      if (to == DType::F32 && moves_parameter(n.inputs[0])) return in_f32(n.inputs[0]);
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

  bool moves_parameter(Value v) const {
    const graph::Node& n = g_.node(v);
    return moves_elements_only(n.op) && n.inputs.size() == 1 && g_.node(n.inputs[0]).op == OpKind::Parameter;
  }

  // Whether an op reading the half value `v` gets a cast up of its own rather than the one every other reader shares:
  // a matmul or convolution reading v itself or a reshape of it (an alias of the same words; not a permute or a
  // broadcast, which move elements), so that fusion absorbs the cast into it (the product reads v in place) whatever
  // else reads v. A residual block's input, read by the next convolution and by the block's add, is read by the
  // convolution as 16-bit words (on tensor cores where the device has them) instead of through an f32 copy; a
  // classifier's pooled features, flattened for its fully connected layer, need no launch to be cast up.
  bool own_cast(OpKind op, Value v) const {
    const OpKind moved_by = g_.node(v).op;
    return reads_half_in_place(op) && (!moves_elements_only(moved_by) || moved_by == OpKind::Reshape ||
                                       moved_by == OpKind::Flatten || keeps_order(g_.node(v)));
  }

  // A permute that moves only dimensions of size 1 (a decoder's query [1, 1, heads, d] to [1, heads, 1, d]): the
  // elements stay in their order, as under a reshape.
  bool keeps_order(const graph::Node& n) const {
    if (n.op != OpKind::Permute) return false;
    const graph::Shape& in = g_.type(n.inputs[0]).shape;
    int64_t last = -1;
    for (int64_t axis : n.attrs.get_ints("perm")) {
      if (in[size_t(axis)] == 1) continue;
      if (axis < last) return false;
      last = axis;
    }
    return true;
  }

  // Whether an op other than a cast reads `v` through the shared cast up, directly or through element moves and copies
  // (which stay in half).
  bool read_in_f32(Value v) const {
    for (Value u : users_[size_t(v.id)]) {
      const OpKind op = g_.node(u).op;
      if (op == OpKind::Cast || own_cast(op, v)) continue;
      if (!stays_half(g_, g_.node(u)) || read_in_f32(u)) return true;
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
  //
  // But a computed value's alias (a reshape, or a permute that keeps the order) that one pointwise op reads in f32 is
  // cast after it: the alias costs nothing, and the cast then sits in its reader's pointwise tree, which reads the half
  // words through the alias (a decoder's query [1, 1, heads * d] seen as [1, heads, 1, d] by the rotary embedding),
  // where a cast below the alias would be a launch of its own.
  Value in_f32(Value v) {
    std::optional<Value>& up = up_[size_t(v.id)];
    if (up) return *up;
    const graph::Node& n = g_.node(v);
    if (moves_elements_only(n.op) && n.inputs.size() == 1 && graph::is_half(g_.type(n.inputs[0]).dtype) &&
        !(aliases_computed_value(n) && one_pointwise_reader_in_f32(v)))
      up = out_.add_node(n.op, {in_f32(n.inputs[0])}, n.attrs, fresh_name(g_, out_, n.name + ".to_f32"));
    else
      up = cast_up(v);
    return *up;
  }

  bool aliases_computed_value(const graph::Node& n) const {
    const bool alias = n.op == OpKind::Reshape || n.op == OpKind::Flatten || keeps_order(n);
    return alias && !graph::is_leaf(g_.node(n.inputs[0]).op);
  }

  // Whether exactly one op reads `v` through its shared cast up, and that op is pointwise (its tree then computes the
  // cast). With several readers the shared cast after the alias would be a launch of its own, where below the alias the
  // launch computing the value computes the cast too (a rotary table's concat, read by cos and sin); and a heavy op (an
  // argmax after the head) reads a producer's cast up in place only where the cast is the producer's epilogue, not
  // after an alias. A move that reads v in f32 may share v's cast, so it counts as not pointwise; slices and concats
  // cast their own results.
  bool one_pointwise_reader_in_f32(Value v) const {
    int readers = 0;
    for (Value u : users_[size_t(v.id)]) {
      const graph::Node& user = g_.node(u);
      if (user.op == OpKind::Cast || own_cast(user.op, v)) continue;
      if (stays_half(g_, user)) {
        if (moves_elements_only(user.op) && read_in_f32(u)) return false;
        continue;
      }
      if (graph::op_category(user.op) != graph::OpCategory::Pointwise) return false;
      ++readers;
    }
    return readers == 1;
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
    // Without the half moves that in_f32 moved after their casts: a dead reader would still count as a reader of what
    // it read (a decode step's key cache, whose write the attention's launch then could not take, fuse.h).
    if (graph::is_half(g.type(v).dtype)) return remove_dead_nodes(Rewriter(g).run());
  return g;
}

}  // namespace spire::passes
