#include "passes/merged_products.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "base/parallel_for.h"
#include "passes/rebuild.h"

namespace spire::passes {

using graph::Tensor;
using graph::Value;

namespace {

// One merged product: its members (matmuls in g's order) and their weights, and what the rebuilt graph holds of it.
struct Group {
  std::vector<Value> products, weights;
  std::vector<int64_t> offsets;  // each member's first column in the merged weight
  int64_t columns = 0;
  Value merged_weight, merged_product;  // in the rebuilt graph, once made
};

// The weights side by side: row k of the result is row k of each member's, in order. Each member's memory is released
// once copied, so the host holds one group's weights twice at most. The copy is bound by memory, so every core takes
// a share even of a small weight (each element counted as 64 of parallel_for's multiply-adds, as
// passes/transposed_weights.cpp does).
void place_side_by_side(const std::vector<Tensor*>& members, int64_t K, int64_t columns, Tensor& out) {
  out.data.assign(size_t(K * columns), 0.0);
  int64_t offset = 0;
  for (Tensor* w : members) {
    const int64_t N = w->shape[1];
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
  // A float [K, N] parameter read by this one matmul alone, as its right operand.
  auto merges = [&](Value product) {
    const graph::Node& m = g.node(product);
    if (m.op != graph::OpKind::Matmul) return false;
    const graph::Node& w = g.node(m.inputs[1]);
    return m.inputs[0] != m.inputs[1] && w.op == graph::OpKind::Parameter && graph::is_float(w.type.dtype) &&
           w.type.shape.size() == 2 && users[size_t(m.inputs[1].id)].size() == 1;
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
  std::map<int64_t, Group*> group_of;  // by a member's product or weight id
  for (auto& [key, group] : by_a)
    if (group.products.size() >= 2)
      for (size_t i = 0; i < group.products.size(); ++i) {
        group_of[group.products[i].id] = &group;
        group_of[group.weights[i].id] = &group;
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

  MergedProducts r;
  // The first member weight met makes the merged one (its value in `weights` under the first member's entry); every
  // member weight then stands for it, read by nothing but the merged product.
  auto copy_leaf = [&](graph::Graph& out, Value v) {
    const graph::Node& n = g.node(v);
    const auto found = group_of.find(v.id);
    if (found == group_of.end()) return out.add_leaf(n.op, n.name, n.type, n.attrs);
    Group& group = *found->second;
    if (group.merged_weight.valid()) return group.merged_weight;
    std::vector<std::string> names;
    std::vector<Tensor*> members;
    for (Value w : group.weights) {
      names.push_back(g.node(w).name);
      members.push_back(&value_of(w));
    }
    const int64_t K = n.type.shape[0];
    Tensor merged;
    merged.dtype = n.type.dtype;
    merged.shape = {K, group.columns};
    place_side_by_side(members, K, group.columns, merged);
    const std::string name = fresh_name(g, out, merged_name(names));
    auto& entry = weights[by_name.at(names.front())];
    entry = {name, std::move(merged)};
    group.merged_weight = out.parameter(name, n.type.dtype, {K, group.columns});
    return group.merged_weight;
  };
  auto copy = [&](graph::Graph& out, Value v, std::vector<Value> inputs, const std::vector<Value>&) {
    const graph::Node& n = g.node(v);
    const auto found = group_of.find(v.id);
    if (found == group_of.end()) return out.add_node(n.op, std::move(inputs), n.attrs, n.name);
    Group& group = *found->second;
    if (!group.merged_product.valid()) {
      std::vector<std::string> names;
      for (Value p : group.products) names.push_back(g.node(p).name);
      group.merged_product = out.add_node(graph::OpKind::Matmul, {inputs[0], group.merged_weight}, {},
                                          fresh_name(g, out, merged_name(names)));
    }
    const size_t i = size_t(std::find(group.products.begin(), group.products.end(), v) - group.products.begin());
    const graph::Shape& shape = n.type.shape;
    std::vector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
    starts.back() = group.offsets[i];
    ++r.merged;
    return out.add_node(graph::op_from_name("slice").value(), {group.merged_product},
                        {{"starts", starts}, {"steps", steps}, {"shape", std::vector<int64_t>(shape)}}, n.name);
  };
  r.graph = rebuild(g, copy, copy_leaf);
  // The members' entries but the first (now the merged weight's) go.
  std::erase_if(weights, [&](const auto& w) {
    const auto member = g.find(w.first);
    return member && group_of.count(member->id) && w.second.data.empty() && !r.graph.find(w.first);
  });
  return r;
}

}  // namespace spire::passes
