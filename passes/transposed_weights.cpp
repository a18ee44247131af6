#include "passes/transposed_weights.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "base/parallel_for.h"
#include "passes/rebuild.h"

namespace spire::passes {

using graph::Tensor;
using graph::Value;

namespace {

// w [K, N] as [N, K] into `out` (w's size), in 64 x 64 blocks so that both sides are read and written along cache
// lines, each thread a range of the blocks' columns. The copy is bound by memory, not arithmetic (8 ns an element on
// one core of the 2-core development machine: 10 s for Llama 1B's 1.2 G weights), so every core takes a share even of
// a small weight: the work given to parallel_for counts each element as 64 of a product's multiply-adds.
void transpose_into(const Tensor& w, std::vector<double>& out) {
  const int64_t K = w.shape[0], N = w.shape[1];
  constexpr int64_t kBlock = 64;
  const double* in = w.data.data();
  double* to = out.data();
  parallel_for((N + kBlock - 1) / kBlock, K * kBlock * 64, [&](int64_t first, int64_t last) {
    for (int64_t n0 = first * kBlock; n0 < std::min(N, last * kBlock); n0 += kBlock)
      for (int64_t k0 = 0; k0 < K; k0 += kBlock)
        for (int64_t k = k0; k < std::min(K, k0 + kBlock); ++k)
          for (int64_t n = n0; n < std::min(N, n0 + kBlock); ++n) to[n * K + k] = in[k * N + n];
  });
}

}  // namespace

TransposedWeights transpose_matmul_weights(const graph::Graph& g,
                                           std::vector<std::pair<std::string, Tensor>>& weights) {
  const auto users = g.users();
  // The float [K, N] parameters every reader of which is a matmul taking them as its right operand only.
  auto replaced = [&](Value p) {
    const graph::Node& n = g.node(p);
    if (n.op != graph::OpKind::Parameter || !graph::is_float(n.type.dtype) || n.type.shape.size() != 2) return false;
    const auto& readers = users[size_t(p.id)];
    return !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](Value u) {
      const graph::Node& m = g.node(u);
      return m.op == graph::OpKind::Matmul && m.inputs[1] == p && m.inputs[0] != p;
    });
  };
  std::map<std::string, std::pair<std::string, Tensor>*> by_name;
  for (auto& w : weights) by_name[w.first] = &w;
  std::map<size_t, std::vector<double>> spare;  // by element count: what the last weight of that size held

  TransposedWeights r;
  auto copy_leaf = [&](graph::Graph& out, Value v) {
    const graph::Node& n = g.node(v);
    if (!replaced(v)) return out.add_leaf(n.op, n.name, n.type, n.attrs);
    // w as the transpose of w.t: every reader is a matmul, which reads it in place.
    const auto found = by_name.find(n.name);
    if (found == by_name.end())
      throw graph::GraphError(fmt::format("transposed weights: no value for parameter '{}'", n.name));
    auto& [name, value] = *found->second;
    if (!(value.type() == n.type))
      throw graph::GraphError(fmt::format("transposed weights: parameter '{}' is {}, its value {}", n.name,
                                          n.type.to_string(), value.type().to_string()));
    name = fresh_name(g, out, n.name + ".t");
    std::vector<double>& buffer = spare[value.data.size()];
    buffer.resize(value.data.size());
    transpose_into(value, buffer);
    std::swap(value.data, buffer);
    value.shape = {n.type.shape[1], n.type.shape[0]};
    ++r.transposed;
    return out.transpose(out.parameter(name, n.type.dtype, value.shape));
  };
  // Every other node as it was, under its own name (which outputs, state updates and the text form refer to).
  auto copy = [&](graph::Graph& out, Value v, std::vector<Value> inputs, const std::vector<Value>&) {
    const graph::Node& n = g.node(v);
    return out.add_node(n.op, std::move(inputs), n.attrs, n.name);
  };
  r.graph = rebuild(g, copy, copy_leaf);
  return r;
}

}  // namespace spire::passes
