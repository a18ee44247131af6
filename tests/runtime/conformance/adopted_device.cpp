// The suite's instance in spire_runtime_conformance_adopted_tests: "vulkan:app", the Vulkan device of a test app
// (tests/runtime/vulkan_external/app_vulkan.h) that creates its own instance and device, enabling every feature spire
// can use, and hands them to spire with rt::vulkan::adopt_device. The contract must hold there as on spire's own
// devices, and the DeviceInfo must match what list_devices() says about the same physical device.
#include <cstdlib>
#include <cstring>

#include "runtime/vulkan/vulkan_external.h"
#include "runtime/vulkan/vulkan_instance.h"
#include "tests/runtime/conformance/conformance.h"
#include "tests/runtime/vulkan_external/app_vulkan.h"

namespace spire::rt::conformance {

namespace {

constexpr const char* kAdopted = "vulkan:app";

// A new test app, with the validation layer on when SPIRE_VULKAN_VALIDATION asks for it, reporting through
// spire's counter as the fixture expects. Never destroyed: spire objects (a test's device, the fixture's cached
// one) may outlive any test, and the app's device must outlive them. nullptr when there is no device.
test_app::AppVulkan* new_app(std::string* why) {
  static VkDebugUtilsMessengerCreateInfoEXT messenger = vulkan::debug_messenger_create_info();
  test_app::AppOptions options;
  const char* v = std::getenv("SPIRE_VULKAN_VALIDATION");
  options.validation = v && (std::strcmp(v, "1") == 0 || std::strcmp(v, "sync") == 0);
  options.messenger = &messenger;
  return test_app::AppVulkan::create(options, why).release();
}

}  // namespace

std::vector<std::string> device_ids() {
  static const bool present = [] {
    std::string why;
    return new_app(&why) != nullptr;  // one app to learn whether there is a device at all
  }();
  return present ? std::vector<std::string>{kAdopted} : std::vector<std::string>{};
}

std::unique_ptr<Device> open_suite_device(const std::string& id) {
  if (id != kAdopted) throw Error("this executable instantiates the suite only for " + std::string(kAdopted));
  std::string why;
  test_app::AppVulkan* app = new_app(&why);
  if (!app) throw Error("the test app has no Vulkan device: " + why);
  return vulkan::adopt_device(app->external());
}

DeviceInfo listed_info(const std::string& id) {
  const std::string name = open_suite_device(id)->info().name;
  for (DeviceInfo d : list_devices()) {
    if (d.backend == Backend::Vulkan && d.name == name) {
      d.id = kAdopted;
      d.index = -1;
      return d;
    }
  }
  ADD_FAILURE() << "list_devices() lists no Vulkan device named " << name;
  return {};
}

// Says so, visibly, where there is nothing to adopt.
TEST(RuntimeConformanceOnAnAdoptedDevice, HasADevice) {
  if (device_ids().empty()) GTEST_SKIP() << "no Vulkan device for the test app to create: suite not run";
}

}  // namespace spire::rt::conformance
