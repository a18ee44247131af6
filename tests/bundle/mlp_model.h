// The small model the bundle tests compile in process (no file, no ONNX): a linear layer, a ReLU and a row
// softmax, so every output row depends on its own input row only and any batch can be checked against the
// float64 evaluator.
#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bundle/compiler/compile_bundle.h"
#include "bundle/compiler/target_profiles.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/text_form.h"

namespace spire::bundle {

// A linear layer, a ReLU and a row softmax: every output row depends on its own input row only.
inline graph::Graph mlp_at(int64_t batch) {
  return graph::parse(fmt::format(R"(x = input() : f32[{0},6]
w = parameter() : f32[6,5]
b = parameter() : f32[5]
mm = matmul(x, w) : f32[{0},5]
h = add(mm, b) : f32[{0},5]
r = relu(h) : f32[{0},5]
y = softmax(r) {{axis=1}} : f32[{0},5]
output y = y
)", batch));
}

inline std::map<std::string, graph::Tensor> weights() {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  graph::Tensor w(graph::DType::F32, {6, 5}, 0), b(graph::DType::F32, {5}, 0);
  for (double& v : w.data) v = float(u(rng));
  for (double& v : b.data) v = float(u(rng));
  return {{"w", w}, {"b", b}};
}

inline Bundle compile_mlp(const std::string& targets, bool dynamic) {
  CompileBundleOptions o;
  o.targets = target_profiles(targets);
  o.dynamic_batch = dynamic;
  o.max_batch = dynamic ? 4 : 0;
  o.model_name = "mlp";
  return compile_bundle([](int64_t batch) { return ModelAtBatch{mlp_at(batch ? batch : 4), weights(), {{"x", "x"}}, {{"y", "y"}}}; }, o);
}

inline std::vector<float> input_rows(int64_t batch) {
  std::mt19937 rng(uint32_t(100 + batch));
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> x(size_t(batch * 6));
  for (float& v : x) v = u(rng);
  return x;
}

inline std::vector<double> reference(int64_t batch, const std::vector<float>& x) {
  auto feeds = weights();
  graph::Tensor t(graph::DType::F32, {batch, 6}, 0);
  for (size_t i = 0; i < x.size(); ++i) t.data[i] = x[i];
  feeds["x"] = t;
  return graph::evaluate(mlp_at(batch), feeds, graph::DType::F64).at("y").data;
}

}  // namespace spire::bundle
