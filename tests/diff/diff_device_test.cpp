// capture_device on each device present: every value of a small layer (matmul, bias, ReLU: fused into one launch by
// the model's plan) is read back, the fused ones from the unfused run, each with the launch that computes it in the
// model's plan, and a right device agrees with the reference.
#include <gtest/gtest.h>

#include <random>

#include "diff/capture.h"
#include "diff/compare.h"
#include "runtime/device.h"
#include "tests/lowering/device_list.h"

namespace spire::diff {
namespace {

using graph::DType;
using graph::Tensor;

Tensor random_tensor(graph::Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t(DType::F32, shape);
  for (double& v : t.data) v = u(rng);
  return t.round_to_dtype();
}

class DiffDevice : public testing::TestWithParam<std::string> {};

TEST_P(DiffDevice, CapturesEveryValueOfAFusedLayerAndAgrees) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {4, 16});
  auto w = g.parameter("w", DType::F32, {16, 8});
  auto b = g.parameter("b", DType::F32, {8});
  auto mm = g.name(g.matmul(x, w), "mm");
  auto biased = g.name(g.add(mm, b), "biased");
  auto h = g.name(g.relu(biased), "h");
  g.output("y", g.name(g.tanh(h), "y"));
  const std::map<std::string, Tensor> feeds{
      {"x", random_tensor({4, 16}, 1)}, {"w", random_tensor({16, 8}, 2)}, {"b", random_tensor({8}, 3)}};

  auto dev = rt::open_device(GetParam());
  const Capture c = capture_device(g, feeds, *dev);
  EXPECT_EQ(c.device, GetParam());
  for (const char* name : {"mm", "biased", "h", "y"}) {
    ASSERT_TRUE(c.values.count(name)) << name;
    EXPECT_EQ(c.values.at(name).type(), g.type(g.at(name))) << name;
    EXPECT_FALSE(c.origins.at(name).launch.empty()) << name << " has no launch";
  }
  // The chain is one launch in the model's plan (the product with its epilogue): its inner values are not stored
  // there, so they come from the unfused run, and their launch is the group's.
  EXPECT_EQ(c.origins.at("mm").source, Source::Unfused);
  EXPECT_EQ(c.origins.at("mm").launch, c.origins.at("y").launch);
  EXPECT_NE(c.origins.at("mm").tuning.find("matmul"), std::string::npos) << c.origins.at("mm").tuning;
  EXPECT_EQ(c.origins.at("y").source, Source::Stored);
  // In the unfused run mm is a product of its own, whose kernel has no epilogue: not the model's fused kernel.
  EXPECT_FALSE(c.origins.at("mm").unfused_kernel.empty());
  EXPECT_NE(c.origins.at("mm").unfused_kernel, c.origins.at("mm").kernel);
  EXPECT_FALSE(c.notes.empty());  // says which values came from the unfused run

  const Capture reference = capture_reference(g, feeds);
  const Comparison cmp = compare(g, c, reference, {.feeds = &feeds});
  EXPECT_TRUE(cmp.agrees()) << cmp.rows[cmp.first.value_or(0)].name;
}

INSTANTIATE_TEST_SUITE_P(Devices, DiffDevice, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const testing::TestParamInfo<std::string>& p) {
                           return lowering::testing_support::test_name(p.param);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DiffDevice);

}  // namespace
}  // namespace spire::diff
