// SPIRE_MASK_FEATURES hides features so portability can be checked on a device that has them.
#include "backends/compile_kernel.h"
#include <cstdlib>

#include "ir/kernel/builder.h"
#include "runtime/backend_registry.h"
#include "tests/vulkan/vulkan_test_fixture.h"

namespace spire::rt::vulkan::test {
namespace {

using namespace spire::kir;

kir::Kernel f64_kernel() {
  KernelBuilder kb("double_it", 64);
  auto y = kb.buffer("y", Type::F64, Access::ReadWrite);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = Val(y[i]) * 2.0; });
  return kb.finish();
}

class FeatureMaskTest : public VulkanTest {
 protected:
  void TearDown() override {
    unsetenv("SPIRE_MASK_FEATURES");
    VulkanTest::TearDown();
  }
};

TEST_F(FeatureMaskTest, MaskedFeaturesVanishFromListAndOpen) {
  const std::string id = dev().info().id;
  auto features_of = [&] {
    for (const auto& d : vulkan::list_devices())
      if (d.id == id) return d.features;
    ADD_FAILURE() << id << " is not listed";
    return Features{};
  };
  unsetenv("SPIRE_MASK_FEATURES");
  Features full = features_of();
  EXPECT_EQ(full, dev().info().features);
  setenv("SPIRE_MASK_FEATURES", "float64, int64", 1);
  Features masked = features_of();
  EXPECT_FALSE(masked.has(Feature::Float64));
  EXPECT_FALSE(masked.has(Feature::Int64));
  EXPECT_EQ(masked.has(Feature::Float16), full.has(Feature::Float16)) << "only the named features go";
  EXPECT_TRUE(masked.has(Feature::AtomicAddInt));
  auto d = vulkan::open(dev().info().index);
  EXPECT_EQ(d->info().features, masked);
}

TEST_F(FeatureMaskTest, CompilingAMaskedFeatureThrowsMissingFeature) {
  setenv("SPIRE_MASK_FEATURES", "float64", 1);
  auto d = vulkan::open(dev().info().index);
  try {
    spire::backends::compile_and_load(*d, f64_kernel());
    FAIL() << "compiling a float64 kernel on a device without float64 succeeded";
  } catch (const rt::MissingFeature& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("double_it"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
    EXPECT_NE(msg.find(d->info().id), std::string::npos) << msg;
  }
}

TEST_F(FeatureMaskTest, UnmaskedDeviceCompilesAndRunsFloat64) {
  if (!dev().info().features.has(Feature::Float64)) GTEST_SKIP() << dev().info().id << " has no float64";
  auto k = spire::backends::compile_and_load(dev(), f64_kernel());
  std::vector<double> ys = {1.0 / 3.0, -2.5, 1e300, 0.0, 7.0};
  auto y = dev().alloc(ys.size() * 8);
  dev().upload(*y, ys.data(), ys.size() * 8);
  BufferView views[] = {BufferView(y)};
  dev().dispatch_now(*k, views, ScalarArgs().u32(uint32_t(ys.size())), Grid{1});
  auto got = download_vector<double>(dev(), *y, ys.size());
  for (size_t i = 0; i < ys.size(); ++i) EXPECT_EQ(got[i], ys[i] * 2.0) << i;
}

}  // namespace
}  // namespace spire::rt::vulkan::test
