// The copy bandwidth a decoder's traffic is measured against: both copies are timed, and best() is the faster.
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/device.h"
#include "tuning/copy_bandwidth.h"

namespace spire::tuning {
namespace {

TEST(CopyBandwidth, BothCopiesRunAndTheFasterCounts) {
  const auto devices = rt::list_devices();
  if (devices.empty()) GTEST_SKIP() << "no device";
  auto dev = rt::open_device(devices[0].id);
  const CopyBandwidth b = copy_bandwidth(*dev, uint64_t(1) << 20, 3, 0);
  EXPECT_GT(b.buffer_copy_gbs, 0);
  EXPECT_GT(b.kernel_copy_gbs, 0);
  EXPECT_EQ(b.best(), std::max(b.buffer_copy_gbs, b.kernel_copy_gbs));
}

}  // namespace
}  // namespace spire::tuning
