#include "passes/half_storage.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "ir/graph/op_table.h"
#include "passes/rebuild.h"

namespace spire::passes {

using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Value;

namespace {

// The leaves keep_interface keeps in f32: those the caller sets and reads, and the constants, whose values (an epsilon
// of 1e-12, a scale of 1/768) half would round or flush before the f32 ops that read them; a half reader gets a cast.
bool kept_leaf(OpKind op) {
  return op == OpKind::Input || op == OpKind::Parameter || op == OpKind::State || op == OpKind::Constant;
}

// `g` with every f32 parameter that only its cast to `half` reads (no state update writes it, it is no output) declared
// `half` under its own name, the cast gone: its readers read the parameter.
Graph half_parameters(const Graph& g, DType half) {
  const auto users = g.users();
  // Parameters that stay f32 leaves whatever reads them: an update's target (the f32 master), an output (the caller
  // reads it as f32).
  std::vector<bool> kept(size_t(g.size()), false);
  for (const auto& u : g.state_updates()) kept[size_t(u.target.id)] = true;
  for (const auto& o : g.outputs()) kept[size_t(o.value.id)] = true;
  auto is_half_cast = [&](Value u) {
    const graph::Node& n = g.node(u);
    return n.op == OpKind::Cast && n.type.dtype == half;
  };
  auto narrowed = [&](Value p) {
    const graph::Node& n = g.node(p);
    const auto& readers = users[size_t(p.id)];
    return n.op == OpKind::Parameter && n.type.dtype == DType::F32 && !kept[size_t(p.id)] && !readers.empty() &&
           std::all_of(readers.begin(), readers.end(), is_half_cast);
  };
  auto copy_leaf = [&](Graph& out, Value v) {
    const graph::Node& n = g.node(v);
    graph::TensorType t = n.type;
    if (narrowed(v)) t.dtype = half;
    return out.add_leaf(n.op, n.name, t, n.attrs);
  };
  auto copy = [&](Graph& out, Value v, std::vector<Value> inputs, const std::vector<Value>&) {
    const graph::Node& n = g.node(v);
    if (n.op == OpKind::Cast && narrowed(n.inputs[0])) return inputs[0];  // the parameter, already half
    return out.add_node(n.op, std::move(inputs), n.attrs, n.name);
  };
  return rebuild(g, copy, copy_leaf);
}

class HalfRewriter {
 public:
  HalfRewriter(const Graph& g, DType half, const HalfOptions& o)
      : g_(g), half_(half), o_(o), wide_(size_t(g.size())), narrow_(size_t(g.size())), other_(size_t(g.size())),
        computed_wide_(size_t(g.size()), false), rounded_(size_t(g.size())) {}

  Graph run() {
    const auto users = g_.users();
    for (Value v : g_.values()) {
      const graph::Node& n = g_.node(v);
      if (!graph::is_leaf(n.op)) continue;
      if (n.type.dtype != DType::F32) {
        other_[id(v)] = out_.add_leaf(n.op, n.name, n.type, n.attrs);
      } else if (o_.keep_interface && kept_leaf(n.op)) {
        wide_[id(v)] = out_.add_leaf(n.op, n.name, n.type, n.attrs);
      } else {
        graph::TensorType t = n.type;
        t.dtype = half_;
        narrow_[id(v)] = out_.add_leaf(n.op, n.name, t, n.attrs);
      }
    }
    // An f32 leaf kept at the interface is cast to half right after the leaves, ahead of every op, when a node that
    // stores half reads it: a matmul or convolution can then take the ops reading it as its epilogue (fuse.h wants an
    // epilogue's inputs computed before the heavy op), and a parameter's cast runs once (parameter_launches.h).
    for (Value v : g_.values())
      if (wide_[id(v)] && !narrow_[id(v)] && graph::is_leaf(g_.node(v).op))
        for (Value u : users[id(v)])
          if (!o_.keep_f32.contains(g_.node(u).name)) {
            narrow_[id(v)] = cast(*wide_[id(v)], half_, g_.node(v).name + "." + std::string(graph::dtype_name(half_)));
            break;
          }
    for (Value v : g_.values())
      if (!graph::is_leaf(g_.node(v).op)) rewrite(v);
    for (const auto& o : g_.outputs())
      out_.output(o.name, o_.keep_interface ? as(o.value, g_.type(o.value).dtype) : primary(o.value));
    for (const auto& u : g_.state_updates()) {
      const Value target = out_.at(g_.node(u.target).name);  // the leaf itself, under its name (not its cast)
      out_.state_update(target, as(u.value, out_.type(target).dtype));
    }
    return o_.keep_interface && o_.parameters_in_half ? half_parameters(out_, half_) : std::move(out_);
  }

 private:
  static size_t id(Value v) { return size_t(v.id); }

  Value cast(Value v, DType to, const std::string& base) {
    return out_.add_node(OpKind::Cast, {v}, {{"to", std::string(graph::dtype_name(to))}},
                         fresh_name(g_, out_, base));
  }

  // What readers of `v` get by default: its f32 value where it was computed in f32 (kept), else its half one.
  Value primary(Value v) const {
    if (g_.type(v).dtype != DType::F32) return other_[id(v)];
    if (computed_wide_[id(v)] || !narrow_[id(v)]) return *wide_[id(v)];
    return *narrow_[id(v)];
  }

  // The f32 value `v` of g as `want` (f32 or half) in the output graph, cast once however many nodes read it that way.
  Value as(Value v, DType want) {
    if (g_.type(v).dtype != DType::F32) return other_[id(v)];
    std::optional<Value>& have = want == DType::F32 ? wide_[id(v)] : narrow_[id(v)];
    if (!have) {
      const Value from = want == DType::F32 ? *narrow_[id(v)] : *wide_[id(v)];
      have = cast(from, want, g_.node(v).name + (want == DType::F32 ? ".f32" : ".half"));
    }
    return *have;
  }

  // Parameter `v` rounded to half and cast back up to f32, once however many nodes read it that way.
  Value rounded(Value v) {
    std::optional<Value>& have = rounded_[id(v)];
    if (!have) have = cast(as(v, half_), DType::F32, g_.node(v).name + ".rounded");
    return *have;
  }

  void rewrite(Value v) {
    const graph::Node& n = g_.node(v);
    const bool kept = o_.keep_f32.contains(n.name);
    // A node reading a value computed in f32 computes in f32 too, so that value is never rounded before it is used;
    // only this node's result is stored in half.
    bool reads_wide = false;
    for (Value in : n.inputs) reads_wide |= g_.type(in).dtype == DType::F32 && computed_wide_[id(in)];
    const DType compute = kept || reads_wide ? DType::F32 : half_;
    // A matrix product or convolution computed in f32 because it reads a kept value (a decoder's projection of a
    // layer_norm's f32 result) still reads its weights rounded to half, as autocast's products do: the half copy, cast
    // up (the product reads that half copy in place, fuse.h's absorbed_upcast), not the f32 one at twice the bytes.
    const bool weights_in_half = compute == DType::F32 && !kept && (n.op == OpKind::Matmul || n.op == OpKind::Conv2d);
    std::vector<Value> inputs;
    for (Value in : n.inputs)
      inputs.push_back(weights_in_half && g_.node(in).op == OpKind::Parameter && g_.type(in).dtype == DType::F32
                           ? rounded(in)
                           : as(in, compute));
    graph::Attrs attrs = n.attrs;
    if (compute != DType::F32 && n.op == OpKind::Cast && attrs.get_string("to") == graph::dtype_name(DType::F32))
      attrs.set("to", std::string(graph::dtype_name(half_)));
    if (n.type.dtype != DType::F32) {
      other_[id(v)] = out_.add_node(n.op, inputs, attrs, n.name);
    } else if (kept) {
      wide_[id(v)] = out_.add_node(n.op, inputs, attrs, n.name);
      computed_wide_[id(v)] = true;
    } else if (compute == DType::F32) {
      // Computed in f32 on a kept value, stored in half under the node's name.
      wide_[id(v)] = out_.add_node(n.op, inputs, attrs, fresh_name(g_, out_, n.name + ".f32"));
      narrow_[id(v)] = out_.add_node(OpKind::Cast, {*wide_[id(v)]}, {{"to", std::string(graph::dtype_name(half_))}},
                                     n.name);
    } else {
      narrow_[id(v)] = out_.add_node(n.op, inputs, attrs, n.name);
    }
  }

  const Graph& g_;
  const DType half_;
  const HalfOptions& o_;
  Graph out_;
  // Each f32 value of g in the output graph, in f32 and in half (either may be absent until a reader asks); the values
  // of other dtypes as they are.
  std::vector<std::optional<Value>> wide_, narrow_;
  std::vector<Value> other_;
  std::vector<bool> computed_wide_;  // kept in f32: readers get the f32 value
  std::vector<std::optional<Value>> rounded_;  // parameters as products computed in f32 read them (rounded())
};

}  // namespace

Graph to_half(const Graph& g, DType half, const HalfOptions& options) { return HalfRewriter(g, half, options).run(); }

std::map<std::string, graph::Tensor> to_half(const std::map<std::string, graph::Tensor>& feeds, DType half) {
  std::map<std::string, graph::Tensor> out = feeds;
  for (auto& [name, t] : out)
    if (t.dtype == DType::F32) {
      t.dtype = half;
      t.round_to_dtype();
    }
  return out;
}

std::set<std::string> autocast_f32_nodes(const Graph& g) {
  std::set<std::string> keep;
  for (const graph::Node& n : g.nodes())
    if (n.type.dtype == DType::F32 && graph::op_info(n.op).autocast_f32) keep.insert(n.name);
  // The optimizer's arithmetic: walk back from each state update's new value through pointwise nodes.
  std::vector<Value> stack;
  for (const auto& u : g.state_updates()) stack.push_back(u.value);
  std::vector<bool> seen(size_t(g.size()), false);
  while (!stack.empty()) {
    const Value v = stack.back();
    stack.pop_back();
    const graph::Node& n = g.node(v);
    if (seen[size_t(v.id)] || graph::is_leaf(n.op) || graph::op_info(n.op).category != graph::OpCategory::Pointwise)
      continue;
    seen[size_t(v.id)] = true;
    if (n.type.dtype == DType::F32) keep.insert(n.name);
    for (Value in : n.inputs) stack.push_back(in);
  }
  return keep;
}

Graph store_in_half(const Graph& g, DType half) {
  return to_half(g, half, {.keep_f32 = autocast_f32_nodes(g), .keep_interface = true, .parameters_in_half = true});
}

}  // namespace spire::passes
