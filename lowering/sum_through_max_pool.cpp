#include "lowering/sum_through_max_pool.h"

#include <optional>
#include <vector>

#include "lowering/decompose.h"

namespace spire::lowering {

namespace {

using graph::OpKind;
using graph::Value;

// True when sum_to(x, target) with x of rank 4 ([N, C, H, W]) adds over both spatial dims.
bool sums_both_spatial_dims(const graph::Shape& x, const std::vector<int64_t>& target) {
  if (x.size() != 4 || target.size() > 4) return false;
  const size_t lead = 4 - target.size();
  for (size_t d : {size_t(2), size_t(3)})
    if (d >= lead && target[d - lead] != 1) return false;
  return true;
}

class Rewriter {
 public:
  explicit Rewriter(const graph::Graph& g) : g_(g), map_(size_t(g.size())) {}

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
    if (n.op == OpKind::SumTo)
      if (auto summed = through_pool(n)) return out_.add_node(OpKind::SumTo, {*summed}, n.attrs, n.name);
    return out_.add_node(n.op, inputs, n.attrs, n.name);
  }

  // What sum_to node `s` may add instead of its input, in the output graph: relu_grad(g, max_pool2d(y)) or g.
  std::optional<Value> through_pool(const graph::Node& s) {
    Value x = s.inputs[0];
    if (!sums_both_spatial_dims(g_.type(x).shape, s.attrs.get_ints("shape"))) return std::nullopt;
    std::optional<Value> mask_of;  // the ReLU mask's operand, which must be the pooled tensor y
    if (g_.node(x).op == OpKind::ReluGrad) {
      mask_of = g_.node(x).inputs[1];
      x = g_.node(x).inputs[0];
    }
    const graph::Node& grad = g_.node(x);
    if (grad.op != OpKind::MaxPool2dGrad) return std::nullopt;
    const Value g = grad.inputs[0], y = grad.inputs[1];
    if (mask_of && *mask_of != y) return std::nullopt;
    if (g_.type(g).numel() >= g_.type(y).numel()) return std::nullopt;  // no fewer elements to add
    if (!mask_of) return map_[size_t(g.id)];
    const std::optional<Value> pooled = forward_pool(y, grad.attrs);
    if (!pooled) return std::nullopt;
    return out_.add_node(OpKind::ReluGrad, {map_[size_t(g.id)], map_[size_t(pooled->id)]}, {},
                         fresh_name(g_, out_, s.name + ".pooled_mask"));
  }

  // The graph's max_pool2d(y) with these window attrs, if it has one.
  std::optional<Value> forward_pool(Value y, const graph::Attrs& attrs) const {
    for (Value v : g_.values()) {
      const graph::Node& n = g_.node(v);
      if (n.op == OpKind::MaxPool2d && n.inputs[0] == y && n.attrs == attrs) return v;
    }
    return std::nullopt;
  }

  const graph::Graph& g_;
  graph::Graph out_;
  std::vector<Value> map_;
};

}  // namespace

graph::Graph sum_through_max_pool(const graph::Graph& g) { return Rewriter(g).run(); }

}  // namespace spire::lowering
