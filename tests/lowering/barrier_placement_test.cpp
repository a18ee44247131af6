// Where a recorded step puts its barriers (runtime/launch_hazards.h): only before a launch that depends on one
// since the last barrier. Run with SPIRE_VULKAN_VALIDATION=sync, so the validation layer's synchronization checks
// report any read-after-write, write-after-read or write-after-write between dispatches that a missing barrier
// leaves (OnDevice fails the test on any message). The step with fewer barriers must also compute exactly what the
// same step with a barrier after every launch (CompileOptions::profile) computes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "frontend/lenet.h"
#include "lowering/executable.h"
#include "lowering/plan.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/lowering/device_list.h"
#include "tests/support/on_device.h"

using namespace spire;
using graph::Tensor;

namespace {

using testing_support::OnDevice;
using BarrierPlacement = OnDevice;

graph::Graph lenet_step(int64_t batch) {
  nn::LeNetGraphOptions o;
  o.batch = batch;
  o.sgd = true;
  o.sgd_options = {.lr = 0.05, .momentum = 0.9, .weight_decay = 0};
  return nn::build_lenet_graph(o);
}

// Two training steps on fixed random pixels and labels; returns the loss of each and the parameters after them.
std::vector<Tensor> train_two_steps(lowering::Executable& exe, int64_t batch) {
  for (const auto& [name, t] : nn::lenet_initial_parameters(7)) exe.set(name, t);
  std::mt19937 rng(11);
  std::normal_distribution<float> pixel(0.f, 1.f);
  std::uniform_int_distribution<int32_t> label(0, 9);
  std::vector<Tensor> out;
  for (int s = 0; s < 2; ++s) {
    std::vector<float> x(static_cast<size_t>(batch * 784));
    std::vector<int32_t> y(static_cast<size_t>(batch));
    for (float& v : x) v = pixel(rng);
    for (int32_t& v : y) v = label(rng);
    exe.set_raw("x", x.data(), x.size() * sizeof(float));
    exe.set_raw("y", y.data(), y.size() * sizeof(int32_t));
    exe.step();
    out.push_back(exe.get("loss"));
  }
  for (const auto& p : nn::make_lenet().parameters()) out.push_back(exe.get(p.name));
  return out;
}

TEST_P(BarrierPlacement, LeNetStepSkipsBarriersBetweenIndependentLaunchesAndComputesTheSame) {
  const int64_t batch = 4;
  const graph::Graph g = lenet_step(batch);
  const size_t launches = lowering::lower(g, dev_->info()).launches.size();
  auto fewer = lowering::compile(g, *dev_);
  auto every = lowering::compile(g, *dev_, {.profile = true});
  // The weight and input gradients of a layer, and the bias gradients, need no barrier between them.
  EXPECT_LT(fewer->barriers(), launches);
  EXPECT_EQ(every->barriers(), launches);
  const std::vector<Tensor> a = train_two_steps(*fewer, batch), b = train_two_steps(*every, batch);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].data.size(), b[i].data.size());
    for (size_t e = 0; e < a[i].data.size(); ++e) {
      ASSERT_TRUE(std::isfinite(a[i].data[e])) << "value " << i << " element " << e;
      ASSERT_EQ(a[i].data[e], b[i].data[e]) << "value " << i << " element " << e;
    }
  }
}

TEST(BarrierPlacement, SynchronizationValidationIsOnWhenAsked) {
  // ctest runs this file with SPIRE_VULKAN_VALIDATION=sync: without the layer the test above proves less.
  const char* v = std::getenv("SPIRE_VULKAN_VALIDATION");
  bool vulkan = false;
  for (const auto& id : lowering::testing_support::device_ids()) vulkan |= id.rfind("vulkan", 0) == 0;
  if (!v || std::strcmp(v, "sync") != 0 || !vulkan)
    GTEST_SKIP() << "SPIRE_VULKAN_VALIDATION=sync not set, or no Vulkan device: nothing to check";
  EXPECT_TRUE(rt::vulkan::validation_enabled()) << "install vulkan-validationlayers";
}

INSTANTIATE_TEST_SUITE_P(AllDevices, BarrierPlacement, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BarrierPlacement);

}  // namespace
