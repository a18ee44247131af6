// The LeNet trainer's compiled training step and test pass, as training/lenet_trainer.h compiles them, on every
// device present: a minibatch (x and y in, the loss out) and a test batch (x in, the logits out) each cost exactly
// one submit and one wait, and the streamed step trains exactly as the step compiled without streaming does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "frontend/lenet.h"
#include "lowering/executable.h"
#include "runtime/device.h"
#include "tests/lowering/device_list.h"
#include "tests/support/on_device.h"
#include "training/lenet_trainer.h"

using namespace spire;

namespace {

class TrainerStep : public testing_support::OnDevice {};

constexpr int64_t kBatch = 8;

std::vector<float> random_images(int64_t batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(size_t(batch * 28 * 28));
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<int32_t> random_classes(int64_t batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, 9);
  std::vector<int32_t> v(static_cast<size_t>(batch));
  for (auto& c : v) c = d(rng);
  return v;
}

graph::Graph step_graph() {
  nn::LeNetGraphOptions opt;
  opt.batch = kBatch;
  opt.sgd = true;
  opt.sgd_options.lr = 0.05;
  return nn::build_lenet_graph(opt);
}

rt::SyncCounts since(const rt::SyncCounts& before, const rt::SyncCounts& now) {
  return {now.submits - before.submits, now.waits - before.waits};
}

// The trainer's loop body: feed a minibatch, step, read the loss.
float train_on(lowering::Executable& step, const std::vector<float>& x, const std::vector<int32_t>& y) {
  step.set_raw("x", x.data(), x.size() * sizeof(float));
  step.set_raw("y", y.data(), y.size() * sizeof(int32_t));
  step.step();
  float loss = 0;
  step.get_raw("loss", &loss, sizeof loss);
  return loss;
}

TEST_P(TrainerStep, AMinibatchIsOneSubmitAndOneWait) {
  auto step = lowering::compile(step_graph(), *dev_, training::lenet_step_compile_options());
  for (const auto& [name, t] : nn::lenet_initial_parameters(3)) step->set(name, t);
  for (int b = 0; b < 3; ++b) {
    auto x = random_images(kBatch, 10 + uint64_t(b));
    auto y = random_classes(kBatch, 20 + uint64_t(b));
    const rt::SyncCounts before = dev_->sync_counts();
    float loss = train_on(*step, x, y);
    const rt::SyncCounts c = since(before, dev_->sync_counts());
    EXPECT_EQ(c.submits, 1u) << "minibatch " << b;
    EXPECT_EQ(c.waits, 1u) << "minibatch " << b;
    EXPECT_TRUE(std::isfinite(loss)) << "minibatch " << b;
  }
}

TEST_P(TrainerStep, ATestBatchIsOneSubmitAndOneWait) {
  auto forward = lowering::compile(training::lenet_forward_graph(kBatch), *dev_, training::lenet_forward_compile_options());
  for (const auto& [name, t] : nn::lenet_initial_parameters(4)) forward->set(name, t);
  std::vector<float> logits(size_t(kBatch * 10));
  for (int b = 0; b < 2; ++b) {
    auto x = random_images(kBatch, 30 + uint64_t(b));
    const rt::SyncCounts before = dev_->sync_counts();
    forward->set_raw("x", x.data(), x.size() * sizeof(float));
    forward->step();
    forward->get_raw("logits", logits.data(), logits.size() * sizeof(float));
    const rt::SyncCounts c = since(before, dev_->sync_counts());
    EXPECT_EQ(c.submits, 1u) << "test batch " << b;
    EXPECT_EQ(c.waits, 1u) << "test batch " << b;
    for (float v : logits) ASSERT_TRUE(std::isfinite(v)) << "test batch " << b;
  }
}

TEST_P(TrainerStep, TheStreamedStepTrainsExactlyAsThePlainOne) {
  const graph::Graph g = step_graph();
  auto streamed = lowering::compile(g, *dev_, training::lenet_step_compile_options());
  auto plain = lowering::compile(g, *dev_);
  for (const auto& [name, t] : nn::lenet_initial_parameters(5)) {
    streamed->set(name, t);
    plain->set(name, t);
  }
  for (int b = 0; b < 4; ++b) {
    auto x = random_images(kBatch, 40 + uint64_t(b));
    auto y = random_classes(kBatch, 50 + uint64_t(b));
    float a = train_on(*streamed, x, y), p = train_on(*plain, x, y);
    EXPECT_EQ(std::memcmp(&a, &p, sizeof a), 0) << "minibatch " << b << ": loss " << a << " vs " << p;
  }
  EXPECT_EQ(streamed->get("fc.5.weight").data, plain->get("fc.5.weight").data);
  EXPECT_EQ(streamed->get("convnet.0.bias").data, plain->get("convnet.0.bias").data);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, TrainerStep, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TrainerStep);

}  // namespace
