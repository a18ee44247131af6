#include "passes/merged_products.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/parallel_for.h"
#include "passes/rebuild.h"

namespace spire::passes {

using graph::Tensor;
using graph::Value;

namespace {

// One merged product: its members (matmuls in g's order), their weights and, where every member's one reader is the
// add of a bias of its own, those adds and biases; and what the rebuilt graph holds of it.
struct Group {
  std::vector<Value> products, weights, sums, biases;
  std::vector<int64_t> offsets;  // each member's first column in the merged weight
  int64_t columns = 0;
  Value merged_weight, merged_bias, merged_product, merged_sum;  // in the rebuilt graph, once made
  bool biased() const { return !sums.empty(); }
};

// The weights (or biases: one row) side by side: row k of the result is row k of each member's, in order. Each
// member's memory is released once copied, so the host holds one group's weights twice at most. The copy is bound by
// memory, so every core takes a share even of a small weight (each element counted as 64 of parallel_for's
// multiply-adds, as passes/transposed_weights.cpp does).
void place_side_by_side(const std::vector<Tensor*>& members, int64_t K, int64_t columns, Tensor& out) {
  out.data.assign(size_t(K * columns), 0.0);
  int64_t offset = 0;
  for (Tensor* w : members) {
    const int64_t N = w->shape.back();
    const double* from = w->data.data();
    double* to = out.data.data();
    parallel_for(K, N * 64, [&](int64_t first, int64_t last) {
      for (int64_t k = first; k < last; ++k)
        std::memcpy(to + k * columns + offset, from + k * N, size_t(N) * sizeof(double));
    });
    offset += N;
    std::vector<double>().swap(w->data);
  }
}

// What a merged weight or product is named: after its first member and how many more it holds.
std::string merged_name(const std::vector<std::string>& members) {
  return fmt::format("{}_and_{}_more", members.front(), members.size() - 1);
}

}  // namespace

MergedProducts merge_products_sharing_a(const graph::Graph& g,
                                        std::vector<std::pair<std::string, Tensor>>& weights) {
  const auto users = g.users();
  // Values the graph hands out as they are (outputs, state updates): one that a merge replaced would hand out the
  // merged value instead, so none is merged.
  std::set<int32_t> handed_out;
  for (const graph::NamedOutput& o : g.outputs()) handed_out.insert(o.value.id);
  for (const graph::StateUpdate& u : g.state_updates()) handed_out.insert(u.target.id), handed_out.insert(u.value.id);
  auto read_once = [&](Value v) { return users[size_t(v.id)].size() == 1 && !handed_out.count(v.id); };
  // A float [K, N] parameter read by this one matmul alone, as its right operand.
  auto merges = [&](Value product) {
    const graph::Node& m = g.node(product);
    if (m.op != graph::OpKind::Matmul) return false;
    const graph::Node& w = g.node(m.inputs[1]);
    return m.inputs[0] != m.inputs[1] && w.op == graph::OpKind::Parameter && graph::is_float(w.type.dtype) &&
           w.type.shape.size() == 2 && read_once(m.inputs[1]);
  };
  // Groups by left operand and weight dtype, members in g's order.
  std::map<std::pair<int64_t, graph::DType>, Group> by_a;
  for (Value v : g.values())
    if (merges(v)) {
      const graph::Node& m = g.node(v);
      Group& group = by_a[{m.inputs[0].id, g.node(m.inputs[1]).type.dtype}];
      group.products.push_back(v);
      group.weights.push_back(m.inputs[1]);
      group.offsets.push_back(group.columns);
      group.columns += g.node(m.inputs[1]).type.shape[1];
    }
  // A member's bias: its product's one reader an add of a parameter [N] of the weight's dtype that nothing else reads
  // (a Linear layer's bias, a Qwen layer's q, k and v). Where every member has one, the biases are merged too and the
  // slices taken after their add, which stays the merged product's epilogue.
  auto bias_of = [&](Value product) -> std::pair<Value, Value> {
    if (!read_once(product)) return {};
    const Value sum = users[size_t(product.id)].front();
    const graph::Node& add = g.node(sum);
    if (add.op != graph::OpKind::Add || add.inputs[0] == add.inputs[1]) return {};
    const Value bias = add.inputs[0] == product ? add.inputs[1] : add.inputs[0];
    const graph::Node& b = g.node(bias);
    const graph::TensorType& w = g.node(g.node(product).inputs[1]).type;
    if (b.op != graph::OpKind::Parameter || b.type.dtype != w.dtype || b.type.shape != graph::Shape{w.shape[1]} ||
        !read_once(bias) || !(add.type == g.node(product).type))
      return {};
    return {sum, bias};
  };
  std::map<int64_t, Group*> group_of;  // by a member's product, weight, add or bias id
  for (auto& [key, group] : by_a) {
    if (group.products.size() < 2) continue;
    for (Value product : group.products) {
      const auto [sum, bias] = bias_of(product);
      if (!sum.valid()) break;
      group.sums.push_back(sum);
      group.biases.push_back(bias);
    }
    if (group.sums.size() != group.products.size()) group.sums.clear(), group.biases.clear();
    for (const auto* members : {&group.products, &group.weights, &group.sums, &group.biases})
      for (Value v : *members) group_of[v.id] = &group;
  }

  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < weights.size(); ++i) by_name[weights[i].first] = i;
  auto value_of = [&](Value w) -> Tensor& {
    const graph::Node& n = g.node(w);
    const auto found = by_name.find(n.name);
    if (found == by_name.end())
      throw graph::GraphError(fmt::format("merged products: no value for parameter '{}'", n.name));
    Tensor& t = weights[found->second].second;
    if (!(t.type() == n.type))
      throw graph::GraphError(fmt::format("merged products: parameter '{}' is {}, its value {}", n.name,
                                          n.type.to_string(), t.type().to_string()));
    return t;
  };
  // The merged weight (or bias) in `out`, made when first needed: its value in `weights` under the first member's
  // entry; the other members' entries are dropped at the end.
  std::set<std::string> dropped;
  auto merged_parameter = [&](graph::Graph& out, const std::vector<Value>& members, Value& made, bool bias) {
    if (made.valid()) return made;
    std::vector<std::string> names;
    std::vector<Tensor*> values;
    for (Value m : members) {
      names.push_back(g.node(m).name);
      values.push_back(&value_of(m));
    }
    const graph::TensorType& first = g.node(members.front()).type;
    int64_t columns = 0;
    for (const Tensor* t : values) columns += t->shape.back();
    const int64_t K = bias ? 1 : first.shape[0];
    Tensor merged;
    merged.dtype = first.dtype;
    merged.shape = bias ? graph::Shape{columns} : graph::Shape{K, columns};
    place_side_by_side(values, K, columns, merged);
    const std::string name = fresh_name(g, out, merged_name(names));
    weights[by_name.at(names.front())] = {name, std::move(merged)};
    dropped.insert(names.begin() + 1, names.end());
    made = out.parameter(name, first.dtype, bias ? graph::Shape{columns} : graph::Shape{K, columns});
    return made;
  };
  auto node_names = [&](const std::vector<Value>& members) {
    std::vector<std::string> names;
    for (Value m : members) names.push_back(g.node(m).name);
    return names;
  };

  MergedProducts r;
  auto copy_leaf = [&](graph::Graph& out, Value v) {
    const graph::Node& n = g.node(v);
    const auto found = group_of.find(v.id);
    if (found == group_of.end()) return out.add_leaf(n.op, n.name, n.type, n.attrs);
    Group& group = *found->second;
    const bool bias = std::find(group.biases.begin(), group.biases.end(), v) != group.biases.end();
    return bias ? merged_parameter(out, group.biases, group.merged_bias, true)
                : merged_parameter(out, group.weights, group.merged_weight, false);
  };
  // A member's product (or, where biased, its add) becomes its slice of the merged result; a biased member's product
  // stands for the merged product, read by nothing but its add, which is replaced.
  auto copy = [&](graph::Graph& out, Value v, std::vector<Value> inputs, const std::vector<Value>& map) {
    const graph::Node& n = g.node(v);
    const auto found = group_of.find(v.id);
    if (found == group_of.end()) return out.add_node(n.op, std::move(inputs), n.attrs, n.name);
    Group& group = *found->second;
    if (!group.merged_product.valid())
      group.merged_product =
          out.add_node(graph::OpKind::Matmul,
                       {map[size_t(g.node(group.products.front()).inputs[0].id)],
                        merged_parameter(out, group.weights, group.merged_weight, false)},
                       {}, fresh_name(g, out, merged_name(node_names(group.products))));
    const std::vector<Value>& members = group.biased() ? group.sums : group.products;
    const auto at = std::find(members.begin(), members.end(), v);
    if (at == members.end()) return group.merged_product;  // a biased member's product
    Value merged = group.merged_product;
    if (group.biased()) {
      if (!group.merged_sum.valid())
        group.merged_sum =
            out.add_node(graph::OpKind::Add,
                         {group.merged_product, merged_parameter(out, group.biases, group.merged_bias, true)}, {},
                         fresh_name(g, out, merged_name(node_names(group.sums))));
      merged = group.merged_sum;
    }
    const graph::Shape& shape = n.type.shape;
    std::vector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
    starts.back() = group.offsets[size_t(at - members.begin())];
    ++r.merged;
    return out.add_node(graph::op_from_name("slice").value(), {merged},
                        {{"starts", starts}, {"steps", steps}, {"shape", std::vector<int64_t>(shape)}}, n.name);
  };
  r.graph = rebuild(g, copy, copy_leaf);
  std::erase_if(weights, [&](const auto& w) { return dropped.count(w.first) > 0; });
  return r;
}

}  // namespace spire::passes
