// Run by ctest with the Vulkan loader pointed at a driver that does not exist (VK_DRIVER_FILES): listing must
// give nothing and not throw, and naming a Vulkan device must fail with a clear error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "runtime/backend_registry.h"

namespace spire::rt::vulkan::test {
namespace {

TEST(NoVulkanDriver, ListIsEmptyAndOpenFailsClearly) {
  if (!std::getenv("SPIRE_TEST_EXPECT_NO_VULKAN"))
    GTEST_SKIP() << "meant to run under ctest with VK_DRIVER_FILES pointing nowhere (SPIRE_TEST_EXPECT_NO_VULKAN=1)";
  std::vector<DeviceInfo> ds;
  EXPECT_NO_THROW(ds = vulkan::list_devices());
  EXPECT_TRUE(ds.empty());
  EXPECT_NO_THROW(ds = rt::list_devices());
  for (const auto& d : ds) EXPECT_NE(d.backend, Backend::Vulkan) << d.id;
  try {
    rt::open_device("vulkan:0");
    FAIL() << "opened vulkan:0 without a driver";
  } catch (const rt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("vulkan:0"), std::string::npos) << e.what();
  }
}

TEST(NoVulkanDriver, NoDeviceAtAllIsAClearError) {
  if (!std::getenv("SPIRE_TEST_EXPECT_NO_VULKAN"))
    GTEST_SKIP() << "meant to run under ctest with VK_DRIVER_FILES pointing nowhere (SPIRE_TEST_EXPECT_NO_VULKAN=1)";
  if (!rt::list_devices().empty()) GTEST_SKIP() << "a CUDA device is present, so the default device exists";
  try {
    rt::open_device("");
    FAIL() << "opened a default device with no device present";
  } catch (const rt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no compute device found"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mesa-vulkan-drivers"), std::string::npos) << "says how to get lavapipe";
  }
}

}  // namespace
}  // namespace spire::rt::vulkan::test
