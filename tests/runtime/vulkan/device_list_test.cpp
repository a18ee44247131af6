// Device discovery and naming: validation is on when asked for, lavapipe is found as a CPU device, the registry
// lists Vulkan first and refuses bad names by name. (Every device's limits: tests/runtime_conformance.)
#include <cstdlib>
#include <string>

#include "runtime/backend_registry.h"
#include "runtime/vulkan/vulkan_instance.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/runtime/vulkan/vulkan_test_fixture.h"

namespace spire::rt::vulkan::test {
namespace {

using DeviceListTest = VulkanTest;

TEST_F(DeviceListTest, ValidationIsOnWhenAskedFor) {
  const char* v = std::getenv("SPIRE_VULKAN_VALIDATION");
  if (!v || std::string(v) != "1") GTEST_SKIP() << "SPIRE_VULKAN_VALIDATION=1 is not set for this run";
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  bool installed = false;
  for (uint32_t i = 0; i < n; ++i) installed |= std::string(layers[i].layerName) == "VK_LAYER_KHRONOS_validation";
  if (!installed)
    GTEST_SKIP() << "VK_LAYER_KHRONOS_validation is not installed here: these tests run WITHOUT validation";
  EXPECT_TRUE(validation_enabled()) << "validation was asked for but the layer is not active";
}

TEST_F(DeviceListTest, MessengerCountsMessages) {
  if (!validation_enabled()) GTEST_SKIP() << "validation is off: nothing to count";
  // A message injected through the debug-utils extension must reach the counter the fixture checks.
  VkDebugUtilsMessengerCallbackDataEXT data{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CALLBACK_DATA_EXT};
  data.pMessage = "spire test: this warning is injected on purpose";
  uint64_t before = validation_message_count();
  vkSubmitDebugUtilsMessageEXT(instance()->handle, VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
                               VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT, &data);
  EXPECT_EQ(validation_message_count(), before + 1);
  expect_validation_messages(1);
}

TEST_F(DeviceListTest, FindsLavapipeAsCpuDevice) {
  auto ds = vulkan::list_devices();
  const DeviceInfo* lvp = nullptr;
  for (const auto& d : ds)
    if (d.name.find("llvmpipe") != std::string::npos) lvp = &d;
  if (!lvp) GTEST_SKIP() << "lavapipe (mesa-vulkan-drivers) is not among the Vulkan devices here";
  EXPECT_EQ(lvp->type, DeviceType::Cpu);
  EXPECT_EQ(lvp->vendor, "Mesa");
  EXPECT_NE(lvp->driver.find("llvmpipe"), std::string::npos) << lvp->driver;
  EXPECT_NE(lvp->driver.find("Mesa"), std::string::npos) << lvp->driver;
  EXPECT_TRUE(lvp->features.has(Feature::Float64) || std::getenv("SPIRE_MASK_FEATURES"));
}

TEST_F(DeviceListTest, RegistryListsVulkanDevicesFirst) {
  auto all = rt::list_devices();
  auto vk = vulkan::list_devices();
  ASSERT_GE(all.size(), vk.size());
  for (size_t i = 0; i < vk.size(); ++i) EXPECT_EQ(all[i].id, vk[i].id);
}

TEST_F(DeviceListTest, DefaultDeviceOpens) {
  auto d = rt::open_device("");
  ASSERT_TRUE(d);
  // On a machine whose only device is lavapipe the default is that device.
  auto all = rt::list_devices();
  if (all.size() == 1) {
    EXPECT_EQ(d->info().id, all[0].id);
  }
  auto same = rt::open_device(vulkan::list_devices()[0].id);
  EXPECT_EQ(same->info().id, "vulkan:0");
  EXPECT_EQ(same->info().name, vulkan::list_devices()[0].name);
}

void expect_error_naming(const std::string& name) {
  try {
    rt::open_device(name);
    ADD_FAILURE() << "open_device(\"" << name << "\") did not throw";
  } catch (const rt::Error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << "message does not name the input: " << e.what();
  }
}

TEST_F(DeviceListTest, BadNamesThrowNamingTheInput) {
  expect_error_naming("vulkan:99");
  expect_error_naming("gpu0");
  expect_error_naming("cuda:x");
  expect_error_naming("vulkan:");
  expect_error_naming("vulkan:-1");
}

TEST_F(DeviceListTest, OpenOutOfRangeIndexThrows) {
  EXPECT_THROW(vulkan::open(99), rt::Error);
  EXPECT_THROW(vulkan::open(-1), rt::Error);
}

}  // namespace
}  // namespace spire::rt::vulkan::test
