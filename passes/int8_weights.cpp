#include "passes/int8_weights.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "passes/rebuild.h"

namespace spire::passes {

using graph::DType;
using graph::Tensor;
using graph::Value;

Int8Columns quantize_columns(const Tensor& w) {
  if (w.rank() != 2 || w.dtype != DType::F32)
    throw graph::GraphError(fmt::format("int8 weights: a weight must be f32 [K, N], not {}", w.type().to_string()));
  const int64_t K = w.shape[0], N = w.shape[1], words = (K + 3) / 4;
  Int8Columns q{Tensor(DType::I32, {N, words}), Tensor(DType::F32, {N})};
  for (int64_t n = 0; n < N; ++n) {
    double largest = 0;
    for (int64_t k = 0; k < K; ++k) largest = std::max(largest, std::abs(w[k * N + n]));
    // In f32, as the weights are (the division correctly rounded to f32, then rounded to the nearest level, ties to
    // even), so that PyTorch's f32 quantization gives the same levels (the decoder tests compare with it).
    const float scale = largest > 0 ? float(largest / 127) : 1.0f;
    q.scale[n] = scale;
    std::vector<uint32_t> packed(size_t(words), 0);
    for (int64_t k = 0; k < K; ++k) {
      const auto level = int32_t(std::clamp(std::nearbyint(float(w[k * N + n]) / scale), -127.0f, 127.0f));
      packed[size_t(k / 4)] |= (uint32_t(level) & 0xFFu) << (8 * (k % 4));
    }
    for (int64_t j = 0; j < words; ++j) q.words[n * words + j] = double(int32_t(packed[size_t(j)]));
  }
  return q;
}

Int8Graph quantize_matmul_weights(const graph::Graph& g, const std::vector<std::pair<std::string, Tensor>>& weights) {
  const auto users = g.users();
  // The f32 [K, N] parameters every reader of which is a matmul taking them as its right operand.
  auto quantizable = [&](Value p) {
    const graph::Node& n = g.node(p);
    if (n.op != graph::OpKind::Parameter || n.type.dtype != DType::F32 || n.type.shape.size() != 2) return false;
    const auto& readers = users[size_t(p.id)];
    return !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](Value u) {
      const graph::Node& m = g.node(u);
      return m.op == graph::OpKind::Matmul && m.inputs[1] == p && m.inputs[0] != p &&
             g.type(m.inputs[0]).shape.size() >= 2;
    });
  };
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : weights) by_name[name] = &t;

  Int8Graph r;
  std::map<int32_t, std::pair<Value, Value>> int8_of;  // a replaced weight -> its words and scale in the new graph
  // A weight to replace is dropped for its int8 form as two parameters; the leaf stands for nothing then (no reader
  // of it is left: every one becomes a matmul_int8_weight reading the two).
  auto copy_leaf = [&](graph::Graph& out, Value v) {
    const graph::Node& n = g.node(v);
    if (!quantizable(v)) return out.add_leaf(n.op, n.name, n.type, n.attrs);
    const auto found = by_name.find(n.name);
    if (found == by_name.end()) throw graph::GraphError(fmt::format("int8 weights: no value for parameter '{}'", n.name));
    Int8Columns q = quantize_columns(*found->second);
    const std::string words = fresh_name(g, out, n.name + ".int8"), scale = fresh_name(g, out, n.name + ".scale");
    int8_of[v.id] = {out.parameter(words, DType::I32, q.words.shape), out.parameter(scale, DType::F32, q.scale.shape)};
    r.weights.emplace_back(words, std::move(q.words));
    r.weights.emplace_back(scale, std::move(q.scale));
    ++r.quantized;
    return Value{};
  };
  // Under the node's own name, which outputs, state updates and the text form refer to.
  auto copy = [&](graph::Graph& out, Value v, std::vector<Value> inputs, const std::vector<Value>&) {
    const graph::Node& n = g.node(v);
    if (const auto q = n.inputs.size() == 2 ? int8_of.find(n.inputs[1].id) : int8_of.end(); q != int8_of.end())
      return out.add_node(*graph::op_from_name("matmul_int8_weight"), {inputs[0], q->second.first, q->second.second},
                          {}, n.name);
    return out.add_node(n.op, std::move(inputs), n.attrs, n.name);
  };
  r.graph = rebuild(g, copy, copy_leaf);
  return r;
}

}  // namespace spire::passes
