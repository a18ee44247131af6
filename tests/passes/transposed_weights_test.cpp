// passes/transposed_weights.h: a graph's matmuls by parameters read them through the transpose of a [N, K] parameter
// holding the transposed values (checked element by element), a parameter also read otherwise stays; the rewritten
// graph computes what the original does on the float64 evaluator, and on every device present, where the product
// reads the transposed weight in place (no launch of its own).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "ir/graph/evaluator.h"
#include "ir/graph/graph.h"
#include "ir/graph/verify.h"
#include "lowering/executable.h"
#include "lowering/precision_policy.h"
#include "passes/transposed_weights.h"
#include "runtime/device.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/lowering/device_list.h"
#include "tests/support/random_tensor.h"

namespace spire::passes {
namespace transposed_weights_test {  // named, not anonymous: test executables build as unity batches

using graph::DType;
using graph::Tensor;
using testing_support::uniform_tensor;

// y = x w + x e (x: one row, as a decoder's step; a second product by w at three rows), with e also added to itself;
// z = x u, u of w's size (the second weight of a size is transposed into the memory the first one left).
struct Model {
  graph::Graph g;
  std::map<std::string, Tensor> feeds;
  Model() {
    auto x = g.input("x", DType::F32, {1, 5});
    auto x3 = g.input("x3", DType::F32, {3, 5});
    auto w = g.parameter("w", DType::F32, {5, 7});
    auto e = g.parameter("e", DType::F32, {5, 7});
    auto u = g.parameter("u", DType::F32, {5, 7});
    g.output("z", g.name(g.matmul(x, u), "z"));
    g.output("y", g.name(g.add(g.matmul(x, w), g.matmul(x, e)), "y"));
    g.output("y3", g.name(g.matmul(x3, w), "y3"));
    g.output("e2", g.add(e, e));
    feeds = {{"x", uniform_tensor({1, 5}, 1, DType::F32)}, {"x3", uniform_tensor({3, 5}, 2, DType::F32)},
             {"w", uniform_tensor({5, 7}, 3, DType::F32)}, {"e", uniform_tensor({5, 7}, 4, DType::F32)},
             {"u", uniform_tensor({5, 7}, 5, DType::F32)}};
  }
  std::vector<std::pair<std::string, Tensor>> weights() const {
    return {{"e", feeds.at("e")}, {"w", feeds.at("w")}, {"u", feeds.at("u")}};
  }
};

TEST(TransposedWeights, MatmulsReadTheTransposeOfATransposedParameter) {
  const Model m;
  auto weights = m.weights();
  const TransposedWeights r = transpose_matmul_weights(m.g, weights);
  EXPECT_EQ(graph::verify(r.graph), "");
  EXPECT_EQ(r.transposed, 2);
  EXPECT_FALSE(r.graph.find("w")) << "the [K, N] weight is dropped";
  ASSERT_TRUE(r.graph.find("w.t"));
  EXPECT_EQ(r.graph.type(*r.graph.find("w.t")).shape, (graph::Shape{7, 5}));
  EXPECT_TRUE(r.graph.find("e")) << "a weight also read by an add stays";
  ASSERT_EQ(weights.size(), 3u);
  EXPECT_EQ(weights[0].first, "e");
  EXPECT_EQ(weights[0].second.shape, (graph::Shape{5, 7})) << "e is as it was";
  ASSERT_EQ(weights[1].first, "w.t") << "w's value renamed where it was";
  ASSERT_EQ(weights[2].first, "u.t");
  for (int i : {1, 2}) {
    const Tensor& t = weights[size_t(i)].second;
    ASSERT_EQ(t.shape, (graph::Shape{7, 5}));
    const Tensor& w = m.feeds.at(i == 1 ? "w" : "u");
    for (int64_t k = 0; k < 5; ++k)
      for (int64_t n = 0; n < 7; ++n) EXPECT_EQ(t[n * 5 + k], w[k * 7 + n]) << weights[size_t(i)].first << " " << k << "," << n;
  }

  std::map<std::string, Tensor> feeds = {{"x", m.feeds.at("x")}, {"x3", m.feeds.at("x3")}};
  for (const auto& [name, t] : weights) feeds[name] = t;
  const auto want = graph::evaluate(m.g, m.feeds, DType::F64), got = graph::evaluate(r.graph, feeds, DType::F64);
  for (const char* out : {"y", "y3", "e2", "z"})
    for (int64_t i = 0; i < want.at(out).numel(); ++i) EXPECT_EQ(got.at(out)[i], want.at(out)[i]) << out << " " << i;
}

TEST(TransposedWeights, RefusesAMissingOrMismatchedValue) {
  const Model m;
  std::vector<std::pair<std::string, Tensor>> missing = {{"e", m.feeds.at("e")}};
  EXPECT_THROW(transpose_matmul_weights(m.g, missing), graph::GraphError);
  std::vector<std::pair<std::string, Tensor>> mismatched = {{"w", Tensor(DType::F32, {7, 5})}};
  EXPECT_THROW(transpose_matmul_weights(m.g, mismatched), graph::GraphError);
}

class TransposedWeightsOnDevice : public testing::TestWithParam<std::string> {};

// On a device, y and y3 of the rewritten graph equal the original graph's on the same device within f32 rounding,
// and the plan launches no transpose.
TEST_P(TransposedWeightsOnDevice, GiveTheOriginalResultsWithoutATransposeLaunch) {
  const Model m;
  auto weights = m.weights();
  const TransposedWeights r = transpose_matmul_weights(m.g, weights);
  auto dev = rt::open_device(GetParam());
  const uint64_t messages = rt::vulkan::validation_message_count();
  auto run = [&](const graph::Graph& g, const std::map<std::string, Tensor>& feeds, std::string* plan) {
    auto exe = lowering::compile(g, *dev);
    for (const auto& [name, t] : feeds) exe->set(name, t);
    exe->step();
    *plan = exe->plan_text();
    return std::make_pair(exe->get("y"), exe->get("y3"));
  };
  std::map<std::string, Tensor> feeds = {{"x", m.feeds.at("x")}, {"x3", m.feeds.at("x3")}};
  for (const auto& [name, t] : weights) feeds[name] = t;
  std::string plan_before, plan_after;
  const auto want = run(m.g, m.feeds, &plan_before), got = run(r.graph, feeds, &plan_after);
  for (int64_t i = 0; i < want.first.numel(); ++i) EXPECT_NEAR(got.first[i], want.first[i], 1e-5) << i;
  for (int64_t i = 0; i < want.second.numel(); ++i) EXPECT_NEAR(got.second[i], want.second[i], 1e-5) << i;
  EXPECT_EQ(plan_after.find("permute"), std::string::npos) << plan_after;
  EXPECT_EQ(plan_after.find("transpose"), std::string::npos) << plan_after;
  EXPECT_EQ(rt::vulkan::validation_message_count(), messages) << "the Vulkan validation layer reported messages";
}

// Under bf16 a product after a layer norm computes in f32 on the norm's result and reads its weight rounded to half
// (passes/half_storage.h): the transposed weight, stored in half, is still read in place, with no launch that moves a
// copy of it (which the plan would keep beside the weight, doubling a decoder's memory), and the result is within
// bf16's rounding of the f32 one.
TEST_P(TransposedWeightsOnDevice, UnderBf16AProductAfterANormReadsTheHalfWeightInPlace) {
  auto dev = rt::open_device(GetParam());
  if (!lowering::has_half_storage(dev->info(), Precision::Bf16)) GTEST_SKIP() << GetParam() << " has no bf16 storage";
  constexpr int64_t K = 64, N = 48;
  graph::Graph g;
  auto x = g.input("x", DType::F32, {1, K});
  auto norm = g.op("layer_norm", {x, g.parameter("scale", DType::F32, {K}), g.parameter("shift", DType::F32, {K})},
                   {{"epsilon", 1e-5}});
  g.output("y", g.matmul(norm, g.parameter("w", DType::F32, {K, N})));
  std::vector<std::pair<std::string, Tensor>> weights = {{"w", uniform_tensor({K, N}, 7, DType::F32)}};
  const TransposedWeights r = transpose_matmul_weights(g, weights);
  ASSERT_EQ(r.transposed, 1);
  std::map<std::string, Tensor> feeds = {{"x", uniform_tensor({1, K}, 8, DType::F32)},
                                         {"scale", uniform_tensor({K}, 9, DType::F32)},
                                         {"shift", uniform_tensor({K}, 10, DType::F32)}};
  for (const auto& [name, t] : weights) feeds[name] = t;
  auto run = [&](Precision p, std::string* plan, lowering::MemoryReport* memory) {
    auto exe = lowering::compile(r.graph, *dev, {.precision = p});
    for (const auto& [name, t] : feeds) exe->set(name, t);
    exe->step();
    *plan = exe->plan_text();
    *memory = exe->memory();
    return exe->get("y");
  };
  std::string plan;
  lowering::MemoryReport memory;
  const Tensor f32 = run(Precision::Fp32, &plan, &memory);
  const Tensor bf16 = run(Precision::Bf16, &plan, &memory);
  EXPECT_EQ(plan.find("parameters only"), std::string::npos) << plan;
  EXPECT_EQ(memory.kept, 0u) << plan;
  EXPECT_EQ(memory.weights, uint64_t(K * N * 2 + 2 * K * 4)) << "w in half, the norm's scale and shift in f32\n" << plan;
  double scale = 0;
  for (double v : f32.data) scale = std::max(scale, std::abs(v));
  for (int64_t i = 0; i < N; ++i) EXPECT_NEAR(bf16[i], f32[i], 2e-2 * scale) << i;
}

INSTANTIATE_TEST_SUITE_P(AllDevices, TransposedWeightsOnDevice,
                         testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TransposedWeightsOnDevice);

}  // namespace transposed_weights_test
}  // namespace spire::passes
