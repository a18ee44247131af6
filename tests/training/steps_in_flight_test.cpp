// The LeNet trainer with one and with two steps in flight (TrainOptions::steps_in_flight), on every device present:
// the same minibatches in the same order, so the same losses and the same test accuracy to the last bit. Two steps
// in flight submit step b + 1 before the wait for step b; a step that started before the one ahead of it ended would
// read stale weights, and the losses would part. The data: Debian's dataset-fashion-mnist (the test command installs
// it), or the folder SPIRE_TEST_FASHION_MNIST names (the GPU machine's copy); skipped, never passed, without either.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "tests/lowering/device_list.h"
#include "training/lenet_trainer.h"

using namespace spire;

namespace {

// Not OnDevice: train_lenet opens its own devices, and on NVIDIA's driver Debian's validation layer reports the
// device creation's structures it predates; the trainer's step runs under the layer in lenet_step_sync_test.cpp.
class TrainerInFlight : public testing::TestWithParam<std::string> {};

std::string data_dir() {
  const char* dir = std::getenv("SPIRE_TEST_FASHION_MNIST");
  return dir ? dir : std::string(io::kFashionMnistDir);
}

std::vector<training::EpochReport> train(const std::string& device, int steps_in_flight) {
  training::TrainOptions opt;
  opt.device = device;
  opt.data_dir = data_dir();
  opt.epochs = 2;
  opt.limit = 640;  // 10 minibatches of 64 an epoch
  opt.eval_batch = 1000;
  opt.progress = false;
  opt.steps_in_flight = steps_in_flight;
  std::FILE* quiet = std::fopen("/dev/null", "w");
  auto reports = training::train_lenet(opt, quiet);
  std::fclose(quiet);
  return reports;
}

TEST_P(TrainerInFlight, TwoStepsInFlightTrainExactlyAsOne) {
  if (!std::filesystem::is_directory(data_dir()))
    GTEST_SKIP() << "no Fashion-MNIST in " << data_dir()
                 << " (apt install dataset-fashion-mnist, or set SPIRE_TEST_FASHION_MNIST)";
  const auto one = train(GetParam(), 1), two = train(GetParam(), 2);
  ASSERT_EQ(one.size(), 2u);
  ASSERT_EQ(two.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(std::memcmp(&one[e].mean_loss, &two[e].mean_loss, sizeof(double)), 0)
        << "epoch " << e + 1 << ": mean loss " << one[e].mean_loss << " vs " << two[e].mean_loss;
    EXPECT_EQ(one[e].test_accuracy, two[e].test_accuracy) << "epoch " << e + 1;
  }
  // It learned: the second epoch's loss is below the first's (the untrained loss is about ln 10 = 2.30).
  EXPECT_LT(two[1].mean_loss, two[0].mean_loss);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, TrainerInFlight, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TrainerInFlight);

}  // namespace
