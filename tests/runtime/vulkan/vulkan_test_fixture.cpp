#include "tests/runtime/vulkan/vulkan_test_fixture.h"

#include <cstdlib>

#include "runtime/backend_registry.h"
#include "runtime/vulkan/vulkan_validation.h"

namespace spire::rt::vulkan::test {

Device* shared_device() {
  static std::unique_ptr<Device> dev = [] {
    std::unique_ptr<Device> d;
    auto listed = vulkan::list_devices();
    if (listed.empty()) return d;
    const char* pick = std::getenv("SPIRE_VULKAN_TEST_DEVICE");
    d = vulkan::open(pick ? std::atoi(pick) : listed[0].index);
    return d;
  }();
  return dev.get();
}

void VulkanTest::SetUp() {
  messages_before_ = validation_message_count();
  device_ = shared_device();
  if (!device_) GTEST_SKIP() << "no Vulkan device present (install mesa-vulkan-drivers for lavapipe)";
}

void VulkanTest::TearDown() {
  EXPECT_EQ(validation_message_count() - messages_before_, expected_messages_)
      << "the Vulkan validation layer reported messages during this test (printed above on stderr)";
}

}  // namespace spire::rt::vulkan::test
