// passes/merged_products.h: the products of one x by weights read by nothing else become one product by the weights
// side by side (checked element by element against values written here) and slices of it; a weight also read
// otherwise, a product of another x and a weight of another dtype stay as they were; the rewritten graph computes what
// the original does on the float64 evaluator, and on every device present, where the merged product is one launch and
// its slices at one row are windows of its result (no launch).
#include <gtest/gtest.h>

#include <map>

#include "ir/graph/evaluator.h"
#include "ir/graph/graph.h"
#include "ir/graph/verify.h"
#include "lowering/executable.h"
#include "passes/merged_products.h"
#include "runtime/device.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/lowering/device_list.h"
#include "tests/support/random_tensor.h"

namespace spire::passes {
namespace merged_products_test {  // named, not anonymous: test executables build as unity batches

using graph::DType;
using graph::Tensor;
using testing_support::uniform_tensor;

// x [1, 2] by a [2, 3], b [2, 2] and c [2, 1] (merged, in that order); x by e (e also added to itself) and by h (f64:
// another dtype); x2, another row, by d. The weights' values are small integers, so the merged one is checked by eye.
struct Model {
  graph::Graph g;
  std::map<std::string, Tensor> feeds;
  Model() {
    auto x = g.input("x", DType::F32, {1, 2});
    auto x2 = g.input("x2", DType::F32, {1, 2});
    g.output("ya", g.name(g.matmul(x, g.parameter("a", DType::F32, {2, 3})), "ya"));
    auto e = g.parameter("e", DType::F32, {2, 3});
    g.output("ye", g.matmul(x, e));
    g.output("e2", g.add(e, e));
    g.output("yb", g.name(g.matmul(x, g.parameter("b", DType::F32, {2, 2})), "yb"));
    g.output("yd", g.matmul(x2, g.parameter("d", DType::F32, {2, 2})));
    g.output("yh", g.matmul(g.cast(x, DType::F64), g.parameter("h", DType::F64, {2, 2})));
    g.output("yc", g.name(g.matmul(x, g.parameter("c", DType::F32, {2, 1})), "yc"));
    auto values = [](DType t, graph::Shape shape, std::vector<double> v) { return Tensor::from(t, shape, v); };
    feeds = {{"x", uniform_tensor({1, 2}, 1, DType::F32)},
             {"x2", uniform_tensor({1, 2}, 2, DType::F32)},
             {"a", values(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})},
             {"b", values(DType::F32, {2, 2}, {7, 8, 9, 10})},
             {"c", values(DType::F32, {2, 1}, {11, 12})},
             {"e", uniform_tensor({2, 3}, 3, DType::F32)},
             {"d", uniform_tensor({2, 2}, 4, DType::F32)},
             {"h", uniform_tensor({2, 2}, 5, DType::F64)}};
  }
  std::vector<std::pair<std::string, Tensor>> weights() const {
    std::vector<std::pair<std::string, Tensor>> w;
    for (const char* name : {"e", "b", "a", "d", "h", "c"}) w.emplace_back(name, feeds.at(name));
    return w;
  }
};

TEST(MergedProducts, ProductsOfOneXByWeightsReadOnceBecomeOneProductAndItsSlices) {
  const Model m;
  auto weights = m.weights();
  const MergedProducts r = merge_products_sharing_a(m.g, weights);
  EXPECT_EQ(graph::verify(r.graph), "");
  EXPECT_EQ(r.merged, 3);
  for (const char* gone : {"a", "b", "c"}) EXPECT_FALSE(r.graph.find(gone)) << gone;
  for (const char* kept : {"e", "d", "h"}) EXPECT_TRUE(r.graph.find(kept)) << kept;
  const auto merged = r.graph.find("a_and_2_more");
  ASSERT_TRUE(merged);
  EXPECT_EQ(r.graph.type(*merged).shape, (graph::Shape{2, 6}));
  int products = 0;
  for (graph::Value v : r.graph.values()) products += r.graph.node(v).op == graph::OpKind::Matmul;
  EXPECT_EQ(products, 4) << "the merged one, x by e, x2 by d and the f64 one";
  for (const char* slice : {"ya", "yb", "yc"}) {
    ASSERT_TRUE(r.graph.find(slice)) << slice;
    EXPECT_EQ(graph::op_name(r.graph.node(*r.graph.find(slice)).op), "slice") << slice;
  }

  // The merged value sits where a's was (the group's first in the graph); b's and c's entries are gone.
  ASSERT_EQ(weights.size(), 4u);
  EXPECT_EQ(weights[1].first, "a_and_2_more");
  EXPECT_EQ(weights[1].second.shape, (graph::Shape{2, 6}));
  EXPECT_EQ(weights[1].second.data, (std::vector<double>{1, 2, 3, 7, 8, 11, 4, 5, 6, 9, 10, 12}));
  EXPECT_EQ(weights[0].first, "e");
  EXPECT_EQ(weights[0].second.data, m.feeds.at("e").data);
  EXPECT_EQ(weights[2].first, "d");
  EXPECT_EQ(weights[3].first, "h");

  std::map<std::string, Tensor> feeds = {{"x", m.feeds.at("x")}, {"x2", m.feeds.at("x2")}};
  for (const auto& [name, t] : weights) feeds[name] = t;
  const auto want = graph::evaluate(m.g, m.feeds, DType::F64), got = graph::evaluate(r.graph, feeds, DType::F64);
  for (const char* out : {"ya", "yb", "yc", "ye", "e2", "yd", "yh"}) {
    ASSERT_EQ(got.at(out).shape, want.at(out).shape) << out;
    for (int64_t i = 0; i < want.at(out).numel(); ++i) EXPECT_EQ(got.at(out)[i], want.at(out)[i]) << out << " " << i;
  }
}

// q = x wq + bq and k = bk + x wk (a Qwen layer's biased projections, the add's operands either way round): the biases
// are merged too and the slices taken after their one add; where only one product of a group has a bias (z1 = y w1 +
// b1, z2 = y w2), the products are merged and the bias's add reads its slice; and where one biased product is also an
// output (p1 of u1 = u wu1 + bu1, u2 = u wu2 + bu2), the biases are not merged, so the output stays p1 itself.
TEST(MergedProducts, BiasesOfEveryMemberAreMergedAndAddedBeforeTheSlices) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {1, 1, 4});
  auto y = g.input("y", DType::F32, {1, 4});
  auto xq = g.matmul(x, g.parameter("wq", DType::F32, {4, 3})), xk = g.matmul(x, g.parameter("wk", DType::F32, {4, 2}));
  g.output("q", g.name(g.add(xq, g.parameter("bq", DType::F32, {3})), "q"));
  g.output("k", g.name(g.add(g.parameter("bk", DType::F32, {2}), xk), "k"));
  g.output("z1", g.add(g.matmul(y, g.parameter("w1", DType::F32, {4, 2})), g.parameter("b1", DType::F32, {2})));
  g.output("z2", g.matmul(y, g.parameter("w2", DType::F32, {4, 3})));
  auto u = g.input("u", DType::F32, {1, 4});
  auto p1 = g.matmul(u, g.parameter("wu1", DType::F32, {4, 2}));
  g.output("p1", p1);
  g.output("u1", g.add(p1, g.parameter("bu1", DType::F32, {2})));
  g.output("u2", g.add(g.matmul(u, g.parameter("wu2", DType::F32, {4, 2})), g.parameter("bu2", DType::F32, {2})));
  std::map<std::string, Tensor> feeds = {{"x", uniform_tensor({1, 1, 4}, 21, DType::F32)},
                                         {"y", uniform_tensor({1, 4}, 22, DType::F32)},
                                         {"u", uniform_tensor({1, 4}, 30, DType::F32)},
                                         {"bq", Tensor::from(DType::F32, {3}, {1, 2, 3})},
                                         {"bk", Tensor::from(DType::F32, {2}, {4, 5})}};
  uint32_t seed = 23;
  for (const auto& [name, shape] : std::vector<std::pair<std::string, graph::Shape>>{
           {"wq", {4, 3}}, {"wk", {4, 2}}, {"w1", {4, 2}}, {"b1", {2}}, {"w2", {4, 3}}, {"wu1", {4, 2}},
           {"bu1", {2}}, {"wu2", {4, 2}}, {"bu2", {2}}})
    feeds[name] = uniform_tensor(shape, seed++, DType::F32);
  std::vector<std::pair<std::string, Tensor>> weights;
  for (const char* name : {"wq", "bq", "wk", "bk", "w1", "b1", "w2", "wu1", "bu1", "wu2", "bu2"})
    weights.emplace_back(name, feeds.at(name));

  const MergedProducts r = merge_products_sharing_a(g, weights);
  EXPECT_EQ(graph::verify(r.graph), "");
  EXPECT_EQ(r.merged, 6);
  int products = 0, adds = 0;
  for (graph::Value v : r.graph.values()) {
    products += r.graph.node(v).op == graph::OpKind::Matmul;
    adds += r.graph.node(v).op == graph::OpKind::Add;
  }
  EXPECT_EQ(products, 3) << "x's, y's and u's merged products";
  EXPECT_EQ(adds, 4) << "the merged biases' add, b1's, bu1's and bu2's";
  for (const char* gone : {"wq", "wk", "bq", "bk", "w1", "w2"}) EXPECT_FALSE(r.graph.find(gone)) << gone;
  EXPECT_TRUE(r.graph.find("b1")) << "a bias of one member alone stays";
  EXPECT_TRUE(r.graph.find("bu1") && r.graph.find("bu2")) << "biases of a product that is an output stay";
  for (const char* slice : {"q", "k"}) {
    ASSERT_TRUE(r.graph.find(slice)) << slice;
    const graph::Node& n = r.graph.node(*r.graph.find(slice));
    EXPECT_EQ(graph::op_name(n.op), "slice") << slice;
    EXPECT_EQ(r.graph.node(n.inputs[0]).op, graph::OpKind::Add) << slice << " is sliced after the bias";
  }
  std::map<std::string, Tensor> merged_feeds = {{"x", feeds.at("x")}, {"y", feeds.at("y")}, {"u", feeds.at("u")}};
  for (const auto& [name, t] : weights) merged_feeds[name] = t;
  ASSERT_EQ(weights.size(), 7u) << "wq's, bq's, w1's and wu1's places hold the merged values; b1, bu1, bu2 stay";
  EXPECT_EQ(weights[0].first, "wq_and_1_more");
  EXPECT_EQ(weights[1].first, "bq_and_1_more");
  EXPECT_EQ(weights[1].second.data, (std::vector<double>{1, 2, 3, 4, 5}));
  EXPECT_EQ(weights[2].first, "w1_and_1_more");
  EXPECT_EQ(weights[3].first, "b1");
  EXPECT_EQ(weights[4].first, "wu1_and_1_more");
  EXPECT_EQ(weights[5].first, "bu1");
  EXPECT_EQ(weights[6].first, "bu2");
  const auto want = graph::evaluate(g, feeds, DType::F64), got = graph::evaluate(r.graph, merged_feeds, DType::F64);
  for (const char* out : {"q", "k", "z1", "z2", "p1", "u1", "u2"}) {
    ASSERT_EQ(got.at(out).shape, want.at(out).shape) << out;
    for (int64_t i = 0; i < want.at(out).numel(); ++i) EXPECT_EQ(got.at(out)[i], want.at(out)[i]) << out << " " << i;
  }
}

TEST(MergedProducts, RefusesAMissingOrMismatchedValue) {
  const Model m;
  std::vector<std::pair<std::string, Tensor>> missing = {{"a", m.feeds.at("a")}};
  EXPECT_THROW(merge_products_sharing_a(m.g, missing), graph::GraphError);
  std::vector<std::pair<std::string, Tensor>> mismatched = {
      {"a", Tensor(DType::F32, {3, 2})}, {"b", m.feeds.at("b")}, {"c", m.feeds.at("c")}};
  EXPECT_THROW(merge_products_sharing_a(m.g, mismatched), graph::GraphError);
}

class MergedProductsOnDevice : public testing::TestWithParam<std::string> {};

void check_merged_products_on(const std::string& device, bool biased);

// A decoder-like layer (x [1, 1, 64] by three weights of 48, 16 and 16 columns, with a bias each or none, each result
// read by a reduction, as a decoder's attention reads its q, k and v) on a device: the results equal the original
// graph's on that device within f32 rounding, and the plan has one product where it had three and no launch for the
// slices. (A pointwise reader of one slice is a launch of its own, where it was its product's epilogue: what a
// decoder's q, k and v do not have.)
TEST_P(MergedProductsOnDevice, GiveTheOriginalResultsInOneProductLaunch) {
  for (const bool biased : {false, true}) {
    SCOPED_TRACE(biased ? "with biases (the merged one the product's epilogue)" : "without biases");
    check_merged_products_on(GetParam(), biased);
  }
}

void check_merged_products_on(const std::string& device, bool biased) {
  constexpr int64_t K = 64;
  graph::Graph g;
  auto x = g.input("x", DType::F32, {1, 1, K});
  std::vector<std::pair<std::string, Tensor>> weights;
  std::map<std::string, Tensor> feeds = {{"x", uniform_tensor({1, 1, K}, 11, DType::F32)}};
  const std::pair<const char*, int64_t> projections[] = {{"q", 48}, {"k", 16}, {"v", 16}};
  uint32_t seed = 12;
  for (const auto& [name, n] : projections) {
    weights.emplace_back(std::string("w") + name, uniform_tensor({K, n}, seed++, DType::F32));
    feeds[weights.back().first] = weights.back().second;
    graph::Value y = g.matmul(x, g.parameter(weights.back().first, DType::F32, {K, n}));
    if (biased) {
      weights.emplace_back(std::string("b") + name, uniform_tensor({n}, seed++, DType::F32));
      feeds[weights.back().first] = weights.back().second;
      y = g.add(y, g.parameter(weights.back().first, DType::F32, {n}));
    }
    g.output(name, g.sum(y, {2}));
  }
  const MergedProducts r = merge_products_sharing_a(g, weights);
  ASSERT_EQ(r.merged, 3);
  std::map<std::string, Tensor> merged_feeds = {{"x", feeds.at("x")}};
  for (const auto& [name, t] : weights) merged_feeds[name] = t;

  auto dev = rt::open_device(device);
  const uint64_t messages = rt::vulkan::validation_message_count();
  auto run = [&](const graph::Graph& graph, const std::map<std::string, Tensor>& values, std::string* plan) {
    auto exe = lowering::compile(graph, *dev);
    for (const auto& [name, t] : values) exe->set(name, t);
    exe->step();
    *plan = exe->plan_text();
    std::map<std::string, Tensor> out;
    for (const char* name : {"q", "k", "v"}) out[name] = exe->get(name);
    return out;
  };
  std::string plan_before, plan_after;
  const auto want = run(g, feeds, &plan_before), got = run(r.graph, merged_feeds, &plan_after);
  for (const char* name : {"q", "k", "v"})
    for (int64_t i = 0; i < want.at(name).numel(); ++i)
      EXPECT_NEAR(got.at(name)[i], want.at(name)[i], 1e-5) << name << " " << i;
  auto count = [](const std::string& text, const std::string& word) {
    int n = 0;
    for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
    return n;
  };
  auto launches = [](const std::string& plan) { return std::stoi(plan.substr(plan.find(" kernels, ") + 10)); };
  EXPECT_EQ(launches(plan_before), 6) << "three products, three sums\n" << plan_before;
  EXPECT_EQ(launches(plan_after), 4) << "one product, three sums\n" << plan_after;
  EXPECT_EQ(count(plan_after, "matvec_"), 1) << plan_after;
  EXPECT_EQ(count(plan_after, "slice"), 0) << "no copy of a slice\n" << plan_after;
  if (biased) {
    EXPECT_EQ(count(plan_after, "_f32_add "), 1) << "the merged bias, the product's epilogue\n" << plan_after;
  }
  EXPECT_EQ(rt::vulkan::validation_message_count(), messages) << "the Vulkan validation layer reported messages";
}

INSTANTIATE_TEST_SUITE_P(AllDevices, MergedProductsOnDevice, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MergedProductsOnDevice);

}  // namespace merged_products_test
}  // namespace spire::passes
