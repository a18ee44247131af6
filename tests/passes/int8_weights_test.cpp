// passes/int8_weights.h: the per-channel quantization (levels and packing against values worked out by hand), and the
// rewrite of a graph's matmuls by constant weights (the f32 weight dropped, a weight also read otherwise kept), its
// result on the float64 evaluator against the matmul by the dequantized weight and within half a step of the f32 one.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "ir/graph/evaluator.h"
#include "ir/graph/graph.h"
#include "ir/graph/verify.h"
#include "passes/int8_weights.h"

namespace spire::passes {
namespace int8_weights_test {  // named, not anonymous: test executables build as unity batches

using graph::DType;
using graph::Tensor;

// w [K=5, N=2]: column 0 has largest magnitude 63.5, so its scale is 0.5 and its levels are w / 0.5; column 1 is
// zeros (scale 1, levels 0).
Tensor weight() {
  return Tensor::from(DType::F32, {5, 2}, {63.5, 0, -31.5, 0, 0, 0, 1, 0, -63.5, 0});
}

TEST(Int8Weights, QuantizesEachOutputChannelWithItsOwnScale) {
  const Int8Columns q = quantize_columns(weight());
  ASSERT_EQ(q.words.shape, (graph::Shape{2, 2}));  // ceil(5 / 4) words a channel
  EXPECT_EQ(q.scale[0], 0.5);
  EXPECT_EQ(q.scale[1], 1.0);
  // Column 0's levels 127, -63, 0, 2 | -127: bytes 0x7F, 0xC1, 0x00, 0x02 | 0x81 (little-endian, padding zero).
  EXPECT_EQ(q.words[0], double(0x0200C17F));
  EXPECT_EQ(q.words[1], double(0x81));
  EXPECT_EQ(q.words[2], 0);
  EXPECT_EQ(q.words[3], 0);
  // A negative level in the top byte makes the word negative as an i32.
  const Int8Columns neg = quantize_columns(Tensor::from(DType::F32, {4, 1}, {0, 0, 0, -1}));
  EXPECT_EQ(neg.words[0], double(int32_t(0x81000000u)));
}

TEST(Int8Weights, RefusesAWeightThatIsNotF32Matrix) {
  EXPECT_THROW(quantize_columns(Tensor(DType::F32, {2, 2, 2})), graph::GraphError);
  EXPECT_THROW(quantize_columns(Tensor(DType::F64, {2, 2})), graph::GraphError);
}

// y = matmul(x, w) + matmul(x, e), with e also added to itself elsewhere: w becomes int8, e stays f32.
TEST(Int8Weights, RewritesMatmulsByConstantWeightsAndKeepsWeightsReadOtherwise) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {3, 5});
  auto w = g.parameter("w", DType::F32, {5, 2});
  auto e = g.parameter("e", DType::F32, {5, 2});
  g.output("y", g.name(g.add(g.matmul(x, w), g.matmul(x, e)), "y"));
  g.output("e2", g.add(e, e));
  const Tensor e_value = Tensor::from(DType::F32, {5, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  const Int8Graph r = quantize_matmul_weights(g, {{"w", weight()}, {"e", e_value}});
  EXPECT_EQ(graph::verify(r.graph), "");
  EXPECT_EQ(r.quantized, 1);
  EXPECT_FALSE(r.graph.find("w")) << "the f32 weight is dropped";
  ASSERT_TRUE(r.graph.find("w.int8") && r.graph.find("w.scale"));
  EXPECT_TRUE(r.graph.find("e"));
  int int8_nodes = 0;
  for (const auto& n : r.graph.nodes()) int8_nodes += graph::op_name(n.op) == "matmul_int8_weight";
  EXPECT_EQ(int8_nodes, 1);

  std::map<std::string, Tensor> feeds = {{"e", e_value}, {"w", weight()}};
  feeds["x"] = Tensor::from(DType::F32, {3, 5}, {1, -2, 0.5, 3, -1, 0.25, 1, 1, -1, 2, 0, 0, 0, 1, 1});
  std::map<std::string, Tensor> int8_feeds = {{"e", e_value}, {"x", feeds["x"]}};
  for (const auto& [name, t] : r.weights) int8_feeds[name] = t;
  const Tensor want = graph::evaluate(g, feeds, DType::F64).at("y");
  const Tensor got = graph::evaluate(r.graph, int8_feeds, DType::F64).at("y");
  // Column 0's weights are exact multiples of its scale (63.5, -31.5, 0, 1, -63.5 are 127, -63, 0, 2, -127 halves),
  // so the int8 product is the f32 one exactly.
  for (int64_t i = 0; i < want.numel(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << i;
}

// Weights off the quantization grid: each result within half a step per term, sum_k |x_k| scale_n / 2.
TEST(Int8Weights, ResultsAreWithinHalfAStepOfTheF32Product) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {2, 6});
  auto w = g.parameter("w", DType::F32, {6, 3});
  g.output("y", g.matmul(x, w));
  Tensor wv(DType::F32, {6, 3}), xv(DType::F32, {2, 6});
  for (int64_t i = 0; i < wv.numel(); ++i) wv[i] = std::sin(double(i) * 1.7) * (1 + double(i % 3));
  for (int64_t i = 0; i < xv.numel(); ++i) xv[i] = std::cos(double(i) * 0.9);
  wv.round_to_dtype(), xv.round_to_dtype();
  const Int8Graph r = quantize_matmul_weights(g, {{"w", wv}});
  std::map<std::string, Tensor> feeds = {{"x", xv}};
  for (const auto& [name, t] : r.weights) feeds[name] = t;
  const Tensor got = graph::evaluate(r.graph, feeds, DType::F64).at("y");
  const Tensor want = graph::evaluate(g, {{"x", xv}, {"w", wv}}, DType::F64).at("y");
  const Tensor& scale = r.weights[1].second;
  double largest_error = 0;
  for (int64_t m = 0; m < 2; ++m)
    for (int64_t n = 0; n < 3; ++n) {
      double bound = 0;
      for (int64_t k = 0; k < 6; ++k) bound += std::abs(xv[m * 6 + k]) * scale[n] / 2;
      EXPECT_LE(std::abs(got[m * 3 + n] - want[m * 3 + n]), bound * (1 + 1e-6)) << m << "," << n;
      largest_error = std::max(largest_error, std::abs(got[m * 3 + n] - want[m * 3 + n]));
    }
  EXPECT_GT(largest_error, 0) << "the weights are off the grid: quantization must show";
}

}  // namespace int8_weights_test
}  // namespace spire::passes
