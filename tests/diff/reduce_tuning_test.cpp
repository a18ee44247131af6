// A kernel config known to be wrong, forced through the tuning cache: a custom op whose kernel is right with its
// first config (wg=64) and wrong in one element with its second (wg=128). diff::reduce must shrink the model to that
// node within the run bound, and diff::blame_tuning must call the cache's choice for it bad and the other good.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "diff/reduce.h"
#include "diff/tuning_blame.h"
#include "extend/custom_op.h"
#include "ir/kernel/builder.h"
#include "runtime/device.h"
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

graph::Tensor ramp(graph::Shape shape) {
  graph::Tensor t(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = std::sin(double(i));
  return t.round_to_dtype();
}

const lowering::TuningKey kWrong{"custom.planted_wg", "[3000]", "f32"}, kRight{"custom.planted_wg", "[1000]", "f32"};

TEST(ReduceTuning, FindsTheNodeOfAWrongConfigAndBlamesTheConfig) {
  register_planted_config_op();
  const auto devices = rt::list_devices();
  if (devices.empty()) GTEST_SKIP() << "no device";
  auto dev = rt::open_device(devices[0].id);

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

}  // namespace
