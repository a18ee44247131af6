// Submitting a stream again before its previous submission completed. The contract asks callers to wait, so
// tests/runtime/conformance does not test this; the Vulkan runtime still waits by itself, because making a
// command buffer pending twice is invalid Vulkan, and the validation layer (on here) says so if it ever does.
#include "tests/runtime/vulkan/vulkan_test_fixture.h"

namespace spire::rt::vulkan::test {
namespace {

using ResubmitTest = VulkanTest;

TEST_F(ResubmitTest, SubmittingAgainWaitsForThePreviousSubmission) {
  auto a = dev().alloc(1 << 20);
  auto b = dev().alloc(1 << 20);
  auto s = dev().record();
  s->copy(BufferView(a), BufferView(b));
  auto f1 = dev().submit(*s);
  auto f2 = dev().submit(*s);
  f2->wait();
  EXPECT_TRUE(f1->ready());
  EXPECT_TRUE(f2->ready());
}

}  // namespace
}  // namespace spire::rt::vulkan::test
