// The portability matrix's guard: the test command runs the op harness on lavapipe three more times, with
// LP_NATIVE_VECTOR_WIDTH 128, 256 and 512, so that kernels meet the subgroup sizes 4, 8 and 16 that Intel and AMD
// devices run (NVIDIA's is 32). This test makes those runs fail if the setting stopped taking effect (a Mesa that
// ignores it would silently test size 8 three times): it checks that vulkan:0 reports the subgroup size the run
// asks for in SPIRE_EXPECT_SUBGROUP_SIZE. Outside the matrix (no such variable) it does not apply.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "runtime/device.h"

namespace {

TEST(SubgroupMatrix, Vulkan0ReportsTheSubgroupSizeThisRunAsksFor) {
  const char* expect = std::getenv("SPIRE_EXPECT_SUBGROUP_SIZE");
  if (!expect) GTEST_SKIP() << "not a run of the subgroup-size matrix (SPIRE_EXPECT_SUBGROUP_SIZE is unset)";
  const spire::rt::DeviceInfo* lavapipe = nullptr;
  const auto devices = spire::rt::list_devices();
  for (const auto& d : devices)
    if (d.id == "vulkan:0") lavapipe = &d;
  ASSERT_NE(lavapipe, nullptr) << "the matrix runs on lavapipe as vulkan:0, and there is no vulkan:0";
  EXPECT_NE(lavapipe->name.find("llvmpipe"), std::string::npos) << "vulkan:0 is " << lavapipe->name;
  EXPECT_EQ(lavapipe->subgroup_size, uint32_t(std::stoul(expect)));
}

}  // namespace
