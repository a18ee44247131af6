// The suite's instances in spire_runtime_conformance_tests: every device present, whichever backend.
#include "tests/runtime/conformance/conformance.h"

namespace spire::rt::conformance {

std::vector<std::string> device_ids() {
  std::vector<std::string> ids;
  for (const auto& d : list_devices()) ids.push_back(d.id);
  return ids;
}

// Says so, visibly, where there is nothing to instantiate the suite for.
TEST(RuntimeConformance, HasADevice) {
  if (device_ids().empty()) GTEST_SKIP() << "no device present (install mesa-vulkan-drivers for lavapipe): suite not run";
}

}  // namespace spire::rt::conformance
