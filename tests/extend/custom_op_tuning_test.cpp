// A custom op that declares configs (as triton.autotune does): it is a tunable node like matmul, lowering uses
// the first config until tuned and the tuner's choice after, every config computes the right values, and a
// tuned choice is kept in the cache and reused without timing.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "extend/custom_op.h"
#include "ir/graph/evaluator.h"
#include "ir/kernel/builder.h"
#include "lowering/executable.h"
#include "lowering/plan.h"
#include "lowering/tunable_ops.h"
#include "op_harness/op_harness.h"
#include "runtime/device.h"
#include "tuning/tune_graph.h"
#include "tuning/tuning_cache.h"

using namespace spire;
using graph::DType;

namespace {

// max(x, 0), one element per invocation, the workgroup size a config: {wg = 64 | 128 | 256}.
void register_tunable_relu() {
  static const bool done = [] {
    ext::CustomOp op{.name = "t_relu_wg"};
    op.reference_expression = "maximum(x, 0)";
    op.gradient_expressions = {{"x", "relu_grad(grad, x)"}};
    op.dtype = DType::F32;
    op.configs = {{{"wg", 64}}, {{"wg", 128}}, {{"wg", 256}}};
    op.kernel = [](const lowering::CustomKernelRequest& r) {
      const uint32_t wg = uint32_t(r.config->get("wg"));
      kir::KernelBuilder kb("relu_wg" + std::to_string(wg), wg);
      auto x = kb.buffer("x", kir::Type::F32, kir::Access::Read);
      auto y = kb.buffer("y", kir::Type::F32, kir::Access::Write);
      auto n = kb.scalar("n", kir::Type::U32);
      auto i = kb.global_id();
      kb.if_(i < n, [&] { y[i] = kir::max(x[i], 0.0f); });
      return kb.finish();
    };
    ext::register_custom_op(std::move(op));
    return true;
  }();
  (void)done;
}

graph::Graph relu_graph() {
  register_tunable_relu();
  graph::Graph g;
  g.output("y", g.op("t_relu_wg", {g.exp(g.input("x", DType::F32, {3000}))}));
  return g;
}

rt::DeviceInfo lavapipe_like() {
  for (const auto& d : rt::list_devices())
    if (d.backend == rt::Backend::Vulkan) return d;
  rt::DeviceInfo d;
  d.id = "vulkan:9";
  d.max_workgroup_invocations = 1024;
  d.max_workgroup_size = {1024, 1024, 64};
  d.shared_memory_bytes = 32768;
  return d;
}

uint32_t custom_kernel_workgroup(const lowering::Plan& plan) {
  for (const auto& l : plan.launches)
    if (plan.kernels[size_t(l.kernel)].name.starts_with("relu_wg")) return plan.kernels[size_t(l.kernel)].workgroup_size[0];
  return 0;
}

TEST(CustomOpTuning, TheOpIsATunableNodeWithItsConfigs) {
  const auto ops = lowering::tunable_ops(relu_graph(), lavapipe_like());
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].key.text(), "custom.t_relu_wg [3000] f32");
  EXPECT_EQ(ops[0].heuristic.text(), "wg=64");
  ASSERT_EQ(ops[0].candidates.size(), 3u);
  EXPECT_EQ(ops[0].candidates[2].text(), "wg=256");
}

TEST(CustomOpTuning, LoweringUsesTheFirstConfigUntilAChoiceSaysOtherwise) {
  const graph::Graph g = relu_graph();
  EXPECT_EQ(custom_kernel_workgroup(lowering::lower(g, lavapipe_like())), 64u);
  lowering::MapTuningChoices choices;
  choices.configs[{"custom.t_relu_wg", "[3000]", "f32"}] = lowering::heavy::Config{{"wg", 256}};
  const lowering::Plan plan = lowering::lower(g, lavapipe_like(), nullptr, &choices);
  EXPECT_EQ(custom_kernel_workgroup(plan), 256u);
  for (const auto& l : plan.launches)
    if (plan.kernels[size_t(l.kernel)].name == "relu_wg256") {
      EXPECT_EQ(l.groups, (3000u + 255) / 256);
    }
}

TEST(CustomOpTuning, EveryConfigIsCorrectAndTheTunedChoiceIsCached) {
  std::vector<rt::DeviceInfo> vulkan;
  for (const auto& d : rt::list_devices())
    if (d.backend == rt::Backend::Vulkan) vulkan.push_back(d);
  if (vulkan.empty()) GTEST_SKIP() << "no Vulkan device";
  auto dev = rt::open_device(vulkan[0].id);
  const graph::Graph g = relu_graph();
  graph::Tensor x(DType::F32, {3000});
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = std::sin(double(i)) * 3;
  x.round_to_dtype();
  const auto want = graph::evaluate(g, {{"x", x}}, DType::F64).at("y");
  for (int64_t wg : {64, 128, 256}) {
    lowering::MapTuningChoices choices;
    choices.configs[{"custom.t_relu_wg", "[3000]", "f32"}] = lowering::heavy::Config{{"wg", wg}};
    auto exe = lowering::compile(g, *dev, {.tuning = &choices});
    exe->set("x", x);
    exe->step();
    EXPECT_LE(harness::max_norm_error(exe->get("y"), want), 1e-6) << "wg=" << wg;
  }
  const auto file = std::filesystem::temp_directory_path() / "spire_custom_tuning.txt";
  std::filesystem::remove(file);
  tuning::TuningCache cache(file.string());
  const auto op = lowering::tunable_ops(g, dev->info()).at(0);
  const tuning::TunedOp first = tuning::tune_op(*dev, cache, op);
  EXPECT_FALSE(first.cached);
  EXPECT_EQ(first.candidates, 3u);
  EXPECT_NE(std::find(op.candidates.begin(), op.candidates.end(), first.best), op.candidates.end());
  cache.save();
  tuning::TuningCache again(file.string());
  const tuning::TunedOp second = tuning::tune_op(*dev, again, op);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.candidates, 0u);
  EXPECT_EQ(second.best, first.best);
  std::filesystem::remove(file);
}

}  // namespace
