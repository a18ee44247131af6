#include "tests/runtime/conformance/conformance.h"

#include <cctype>
#include <cstdlib>
#include <map>

#include "runtime/vulkan/vulkan_validation.h"

namespace spire::rt::conformance {

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

void Conformance::SetUp() { validation_messages_before_ = vulkan::validation_message_count(); }

void Conformance::TearDown() {
  ::unsetenv("SPIRE_MASK_FEATURES");
  // The count is process-wide and stays 0 where validation is off (and on CUDA devices), so this costs nothing
  // there and catches a Vulkan driver being misused everywhere else.
  EXPECT_EQ(vulkan::validation_message_count(), validation_messages_before_)
      << "the Vulkan validation layer reported messages during this test (printed above on stderr)";
}

Device& Conformance::dev() {
  static std::map<std::string, std::unique_ptr<Device>> opened;
  auto& d = opened[GetParam()];
  if (!d) d = open_suite_device(GetParam());
  return *d;
}

std::unique_ptr<Device> Conformance::open_masked(const std::string& mask) {
  ::setenv("SPIRE_MASK_FEATURES", mask.c_str(), 1);
  std::unique_ptr<Device> d;
  try {
    d = open_suite_device(GetParam());
  } catch (...) {
    ::unsetenv("SPIRE_MASK_FEATURES");
    throw;
  }
  ::unsetenv("SPIRE_MASK_FEATURES");
  return d;
}

}  // namespace spire::rt::conformance
