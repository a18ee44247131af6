// Faults planted on purpose, in custom ops whose kernels are written with the kernel builder, so they run on every
// device (Vulkan and CUDA alike; the op files' GLSL faults of cli_diff_test.cpp and cli_reduce_test.cpp run on Vulkan
// only), on each device present:
//   * a kernel wrong in one element while its reference is right: diff names its node as the first divergence, with
//     no input off, and reduce shrinks the model to that node within the run bound;
//   * a NaN planted in one element: diff counts it at that node, and reduce --until nan finds the node;
//   * a kernel config known to be wrong, forced through the tuning cache: a custom op whose kernel is right with its
//     first config (wg=64) and wrong in one element with its second (wg=128); reduce shrinks the model to that node and
//     blame_tuning calls the cache's choice for it bad and the other good.
// On the GPU machine: tools/gpu/run-checks.sh PARTS=diff runs this program on cuda:0 and vulkan:0.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "diff/reduce.h"
#include "diff/tuning_blame.h"
#include "diff/capture.h"
#include "extend/custom_op.h"
#include "ir/graph/op_table.h"
#include "ir/kernel/builder.h"
#include "runtime/device.h"
#include "tests/lowering/device_list.h"
#include "tuning/tuning_cache.h"

using namespace spire;
using graph::DType;

namespace {

void register_planted_config_op() {
  static const bool done = [] {
    ext::CustomOp op{.name = "planted_wg"};
    op.reference_expression = "maximum(x, 0)";
    op.dtype = DType::F32;
    op.configs = {{{"wg", 64}}, {{"wg", 128}}};
    op.kernel = [](const lowering::CustomKernelRequest& r) {
      const uint32_t wg = uint32_t(r.config->get("wg"));
      kir::KernelBuilder kb("planted_wg" + std::to_string(wg), wg);
      auto x = kb.buffer("x", kir::Type::F32, kir::Access::Read);
      auto y = kb.buffer("y", kir::Type::F32, kir::Access::Write);
      auto n = kb.scalar("n", kir::Type::U32);
      auto i = kb.global_id();
      // The planted fault: with wg=128, element 7 gets 0.5 added.
      const float planted = wg == 128 ? 0.5f : 0.0f;
      kb.if_(i < n, [&] {
        const kir::Val relu = kir::max(x[i], 0.0f);
        y[i] = kir::select(i == 7u, relu + planted, relu);
      });
      return kb.finish();
    };
    ext::register_custom_op(std::move(op));
    return true;
  }();
  (void)done;
}

// An elementwise op that computes maximum(x, 0) as its reference says, except at element `at`, where `fault` is
// applied to it: the planted kernel, written with the kernel builder.
void register_planted_op(const std::string& name, uint32_t at, const std::function<kir::Val(kir::Val)>& fault) {
  if (graph::op_from_name(name)) return;
  ext::CustomOp op{.name = name};
  op.reference_expression = "maximum(x, 0)";
  op.dtype = DType::F32;
  op.tolerance = 0;
  op.kernel = [name, at, fault](const lowering::CustomKernelRequest&) {
    kir::KernelBuilder kb(name, 64);
    auto x = kb.buffer("x", kir::Type::F32, kir::Access::Read);
    auto y = kb.buffer("y", kir::Type::F32, kir::Access::Write);
    auto n = kb.scalar("n", kir::Type::U32);
    auto i = kb.global_id();
    kb.if_(i < n, [&] {
      const kir::Val relu = kir::max(x[i], 0.0f);
      y[i] = kir::select(i == at, fault(relu), relu);
    });
    return kb.finish();
  };
  ext::register_custom_op(std::move(op));
}

graph::Tensor ramp(graph::Shape shape) {
  graph::Tensor t(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = std::sin(double(i));
  return t.round_to_dtype();
}

const lowering::TuningKey kWrong{"custom.planted_wg", "[3000]", "f32"}, kRight{"custom.planted_wg", "[1000]", "f32"};

// A two-layer MLP with the planted op as its activation ("act"); every tensor an input.
graph::Graph planted_mlp(const std::string& op) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {4, 16});
  auto h = g.name(g.add(g.name(g.matmul(x, g.input("w1", DType::F32, {16, 32})), "mm1"), g.input("b1", DType::F32, {32})), "h1");
  auto act = g.name(g.op(op, {h}), "act");
  g.output("y", g.name(g.tanh(g.name(g.matmul(act, g.input("w2", DType::F32, {32, 8})), "mm2")), "y"));
  return g;
}

std::map<std::string, graph::Tensor> mlp_feeds() {
  auto scaled = [](graph::Shape shape, double by) {
    graph::Tensor t = ramp(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] *= by;
    return t.round_to_dtype();
  };
  return {{"x", ramp({4, 16})}, {"w1", scaled({16, 32}, 0.25)}, {"b1", ramp({32})}, {"w2", scaled({32, 8}, 0.25)}};
}

class PlantedFault : public testing::TestWithParam<std::string> {};

TEST_P(PlantedFault, AWrongElementIsNamedAtItsNodeAndReducedToIt) {
  register_planted_op("planted_off", 9, [](kir::Val v) { return v + 0.5f; });
  auto dev = rt::open_device(GetParam());
  const graph::Graph g = planted_mlp("planted_off");
  const auto feeds = mlp_feeds();
  const diff::Comparison c = diff::try_on_device(g, feeds, *dev, {});
  ASSERT_TRUE(c.failure.empty()) << c.failure;
  ASSERT_TRUE(c.first.has_value()) << "the planted fault went unseen";
  const diff::ValueRow& first = c.rows[*c.first];
  EXPECT_EQ(first.name, "act");
  EXPECT_TRUE(first.inputs_off.empty()) << "an input of the faulty node was off";
  const diff::Reduction r = diff::reduce(g, feeds, *dev, {});
  ASSERT_TRUE(r.fails) << r.why;
  EXPECT_EQ(r.target, "act");
  EXPECT_EQ(r.nodes, std::vector<std::string>{"act"});
  EXPECT_LE(r.runs.size(), size_t(std::ceil(std::log2(double(r.model_values)))) + 5);
}

TEST_P(PlantedFault, APlantedNanIsCountedAtItsNodeAndReducedToIt) {
  register_planted_op("planted_nan_kb", 5, [](kir::Val v) { return (v - v) / (v - v); });  // 0/0
  auto dev = rt::open_device(GetParam());
  const graph::Graph g = planted_mlp("planted_nan_kb");
  const auto feeds = mlp_feeds();
  const diff::Comparison c = diff::try_on_device(g, feeds, *dev, {});
  ASSERT_TRUE(c.failure.empty()) << c.failure;
  ASSERT_TRUE(c.first.has_value()) << "the planted NaN went unseen";
  EXPECT_EQ(c.rows[*c.first].name, "act");
  EXPECT_EQ(c.rows[*c.first].error.nan, 1);
  const diff::Reduction r = diff::reduce(g, feeds, *dev, {.until = diff::Until::Nan});
  ASSERT_TRUE(r.fails) << r.why;
  EXPECT_EQ(r.target, "act");
  EXPECT_EQ(r.nodes, std::vector<std::string>{"act"});
  EXPECT_LE(r.runs.size(), size_t(std::ceil(std::log2(double(r.model_values)))) + 5);
}

TEST_P(PlantedFault, AWrongConfigIsReducedToItsNodeAndBlamed) {
  register_planted_config_op();
  auto dev = rt::open_device(GetParam());

  graph::Graph g;
  const auto e = g.name(g.exp(g.input("x", DType::F32, {3000})), "e");
  g.output("y", g.name(g.tanh(g.name(g.op("planted_wg", {e}), "act")), "y"));
  g.output("b", g.name(g.op("planted_wg", {g.input("z", DType::F32, {1000})}), "b"));
  const std::map<std::string, graph::Tensor> feeds{{"x", ramp({3000})}, {"z", ramp({1000})}};

  // The cache file forces wg=128 on the [3000] node and keeps wg=64 for the [1000] one.
  const auto file =
      std::filesystem::temp_directory_path() / ("spire_reduce_tuning_" + std::to_string(getpid()) + ".txt");
  std::filesystem::remove(file);
  {
    tuning::TuningCache cache(file.string());
    const tuning::DeviceKey device = tuning::DeviceKey::of(dev->info());
    cache.put({device, kWrong, lowering::heavy::Config{{"wg", 128}}, 1, 2});
    cache.put({device, kRight, lowering::heavy::Config{{"wg", 64}}, 1, 1});
    cache.save();
  }
  const lowering::MapTuningChoices choices = tuning::TuningCache(file.string()).choices_for(dev->info());
  ASSERT_EQ(choices.configs.size(), 2u);
  const diff::ReduceOptions options{.compile = {.tuning = &choices}};

  // Without the cache the model agrees: the fault is the config's.
  const diff::Comparison heuristic = diff::try_on_device(g, feeds, *dev, {});
  EXPECT_TRUE(heuristic.agrees()) << heuristic.failure;

  const diff::Reduction r = diff::reduce(g, feeds, *dev, options);
  ASSERT_TRUE(r.fails) << r.why;
  EXPECT_EQ(r.target, "act");
  EXPECT_EQ(r.nodes, std::vector<std::string>{"act"});
  EXPECT_LE(r.runs.size(), size_t(std::ceil(std::log2(4.0))) + 5);
  ASSERT_TRUE(r.comparison.first.has_value());
  EXPECT_EQ(r.comparison.rows[*r.comparison.first].name, "act");

  // On the reduced model: only the wrong choice is there, and it is bad.
  const diff::TuningBlame small =
      diff::blame_tuning(r.smallest.graph, r.smallest.feeds, *dev, options, choices, r.target);
  EXPECT_TRUE(small.depends) << small.heuristic_why;
  ASSERT_EQ(small.verdicts.size(), 1u);
  EXPECT_EQ(small.verdicts[0].key, kWrong);
  EXPECT_TRUE(small.verdicts[0].bad);
  // On the whole model: the wrong one bad, the right one good.
  const diff::TuningBlame whole = diff::blame_tuning(g, feeds, *dev, options, choices, r.target);
  ASSERT_EQ(whole.verdicts.size(), 2u);
  for (const diff::ConfigVerdict& v : whole.verdicts) {
    EXPECT_EQ(v.bad, v.key == kWrong) << v.key.text() << ": " << v.why;
  }
  std::filesystem::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Devices, PlantedFault, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const testing::TestParamInfo<std::string>& p) {
                           return lowering::testing_support::test_name(p.param);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PlantedFault);

}  // namespace
