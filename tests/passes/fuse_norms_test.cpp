// The canonical pass that finds layer and RMS normalizations (passes/fuse_norms.h): each form it knows becomes one op
// with the chain's epsilon, computing what the chain computes (the float64 evaluator, within 1e-12); chains it must
// leave alone stay as they are.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "ir/graph/evaluator.h"
#include "passes/fuse_norms.h"
#include "tests/support/random_tensor.h"

namespace spire::passes {
namespace fuse_norms_test {  // named, not anonymous: test executables build as unity batches

using graph::DType;
using graph::Graph;
using graph::Value;

int count_op(const Graph& g, const std::string& name) {
  int n = 0;
  for (const graph::Node& node : g.nodes()) n += graph::op_name(node.op) == name;
  return n;
}

// x [2, 3, 8]; the scale and bias vectors of 8 (or `vector` elements: 1 is not the axis's length).
struct Chain {
  Graph g;
  Value x, scale, bias;
};
Chain inputs(int64_t vector = 8) {
  Chain c;
  c.x = c.g.input("x", DType::F32, {2, 3, 8});
  c.scale = c.g.parameter("scale", DType::F32, {vector});
  c.bias = c.g.parameter("bias", DType::F32, {vector});
  return c;
}

// ONNX's LayerNormalization below opset 17 as PyTorch exports it (square: pow(d, 2)) or as spire's importer builds it
// (d * d).
Graph layer_norm_chain(bool pow_form, int64_t vector = 8, bool extra_reader = false) {
  Chain c = inputs(vector);
  Graph& g = c.g;
  const Value d = g.sub(c.x, g.mean(c.x, {2}, true));
  const Value square = pow_form ? g.pow(d, g.scalar(2.0, DType::F32)) : g.mul(d, d);
  const Value var = g.mean(square, {2}, true);
  const Value y = g.add(g.mul(g.div(d, g.sqrt(g.add(var, g.scalar(1e-5, DType::F32)))), c.scale), c.bias);
  g.output("y", y);
  if (extra_reader) g.output("var", var);
  return std::move(g);
}

// A Llama's RMSNorm: scale * (x * rsqrt(mean(x^2) + eps)), rsqrt as reciprocal(sqrt) or 1 / sqrt.
Graph rms_norm_chain(bool reciprocal) {
  Chain c = inputs();
  Graph& g = c.g;
  const Value root = g.sqrt(g.add(g.mean(g.pow(c.x, g.scalar(2.0, DType::F32)), {2}, true), g.scalar(1e-6, DType::F32)));
  const Value rsqrt = reciprocal ? g.op("reciprocal", {root}) : g.div(g.scalar(1.0, DType::F32), root);
  g.output("y", g.mul(c.scale, g.mul(c.x, rsqrt)));
  return std::move(g);
}

// The fused graph's y against the chain's on the float64 evaluator.
void expect_same_result(const Graph& chain, const Graph& fused) {
  const std::map<std::string, graph::Tensor> feeds{
      {"x", testing_support::uniform_tensor({2, 3, 8}, 1, DType::F32)},
      {"scale", testing_support::uniform_tensor({8}, 2, DType::F32)},
      {"bias", testing_support::uniform_tensor({8}, 3, DType::F32)}};
  const graph::Tensor want = graph::evaluate(chain, feeds, DType::F64).at("y");
  const graph::Tensor got = graph::evaluate(fused, feeds, DType::F64).at("y");
  ASSERT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
}

TEST(FuseNorms, LayerNormChainsBecomeOneOp) {
  for (bool pow_form : {true, false}) {
    SCOPED_TRACE(pow_form ? "pow(d, 2)" : "d * d");
    const Graph chain = layer_norm_chain(pow_form);
    const Graph fused = fuse_norms(chain);
    EXPECT_EQ(count_op(fused, "layer_norm"), 1);
    EXPECT_EQ(count_op(fused, "mean"), 0);
    EXPECT_EQ(count_op(fused, "sqrt"), 0);
    for (const graph::Node& n : fused.nodes()) {
      if (graph::op_name(n.op) == "layer_norm") {
        EXPECT_DOUBLE_EQ(n.attrs.get_float("epsilon"), 1e-5);
      }
    }
    expect_same_result(chain, fused);
  }
}

TEST(FuseNorms, RmsNormChainsBecomeOneOp) {
  for (bool reciprocal : {true, false}) {
    SCOPED_TRACE(reciprocal ? "reciprocal(sqrt)" : "1 / sqrt");
    const Graph chain = rms_norm_chain(reciprocal);
    const Graph fused = fuse_norms(chain);
    EXPECT_EQ(count_op(fused, "rms_norm"), 1);
    EXPECT_EQ(count_op(fused, "mean"), 0);
    expect_same_result(chain, fused);
  }
}

TEST(FuseNorms, ChainsItCannotReplaceStay) {
  // A scale of one element (broadcast, not a vector of the axis) and a variance something else reads.
  for (const Graph& chain : {layer_norm_chain(true, 1), layer_norm_chain(true, 8, true)}) {
    const Graph fused = fuse_norms(chain);
    EXPECT_EQ(count_op(fused, "layer_norm"), 0);
    EXPECT_EQ(count_op(fused, "mean"), 2);
  }
}

}  // namespace fuse_norms_test
}  // namespace spire::passes
