// Every example on every device present, at the sizes where indexing goes wrong: 1, one under, at and over
// a workgroup, a large odd size, and one needing more than 65535 workgroups (the grid must fold).
// Outputs are poisoned before each run; the Khronos validation layer is on and any message fails.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "examples/builtin_kernels.h"
#include "examples/example_runner.h"
#include "runtime/device.h"
#include "runtime/vulkan/vulkan_validation.h"

using namespace spire;

namespace {

struct Case {
  std::string device;
  std::string example;
  uint64_t n;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.device << " " << c.example << " n=" << c.n; }

// Elements each example gives one workgroup, to size the "more than 65535 workgroups" case.
uint64_t elements_per_group(const std::string& example) {
  return example == "relu" ? examples::kReluBlock : 256;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& d : rt::list_devices())
    for (const auto& ex : examples::examples()) {
      for (uint64_t n : {1ull, 255ull, 256ull, 257ull, 1000003ull}) out.push_back({d.id, ex.name, n});
      out.push_back({d.id, ex.name, 65536 * elements_per_group(ex.name) + 3});
    }
  return out;
}

class ExampleOnDevice : public testing::TestWithParam<Case> {};

TEST_P(ExampleOnDevice, MatchesTheCpu) {
  const Case& c = GetParam();
  auto dev = rt::open_device(c.device);
  const auto& info = dev->info();
  // A buffer the device cannot bind must be refused with a clear error, never run wrongly.
  uint64_t bytes = c.n * 4;
  uint64_t before = rt::vulkan::validation_message_count();
  const examples::Example* ex = nullptr;
  for (const auto& e : examples::examples())
    if (e.name == c.example) ex = &e;
  ASSERT_NE(ex, nullptr);
  if (bytes > info.max_buffer_bytes) {
    EXPECT_THROW(ex->run(*dev, c.n, 7), rt::Error) << "a binding beyond the device's limit must be refused";
    GTEST_SKIP() << fmt::format("{} elements ({} MiB) exceed {}'s largest binding ({} MiB): the refusal was checked, "
                                "the folded run happens on devices with larger bindings",
                                c.n, bytes >> 20, info.id, info.max_buffer_bytes >> 20);
  }
  auto r = ex->run(*dev, c.n, 7);
  EXPECT_EQ(r.unwritten, 0u) << "outputs left unwritten";
  EXPECT_LE(r.max_rel_error, r.tolerance);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(rt::vulkan::validation_message_count(), before) << "the Vulkan validation layer reported messages";
}

std::string case_name(const testing::TestParamInfo<Case>& p) {
  std::string d = p.param.device;
  for (auto& ch : d)
    if (ch == ':') ch = '_';
  return fmt::format("{}_{}_{}", d, p.param.example, p.param.n);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, ExampleOnDevice, testing::ValuesIn(cases()), case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ExampleOnDevice);

TEST(Examples, AtLeastOneDeviceIsPresent) {
  // lavapipe is installed by the test command: no device means a broken setup, not a pass.
  EXPECT_FALSE(rt::list_devices().empty()) << "no Vulkan or CUDA device: install mesa-vulkan-drivers";
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
