// Discrete GPUs keep device-local memory out of the host's reach: transfers then go through a staging buffer.
// SPIRE_VULKAN_FORCE_STAGING=1 takes that path on any device, so lavapipe tests it too. (Round trips, offsets
// and fills on the ordinary path are tests/runtime/conformance's, for every backend.)
#include <random>

#include "runtime/vulkan/vulkan_buffer.h"
#include "tests/runtime/vulkan/vulkan_test_fixture.h"

namespace spire::rt::vulkan::test {
namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

class StagingTest : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped()) return;
    setenv("SPIRE_VULKAN_FORCE_STAGING", "1", 1);
    staged_ = rt::open_device(dev().info().id);
    unsetenv("SPIRE_VULKAN_FORCE_STAGING");
  }
  void TearDown() override {
    staged_.reset();
    VulkanTest::TearDown();
  }
  std::unique_ptr<Device> staged_;
};

TEST_F(StagingTest, RoundTripsFillsAndStreamsThroughStaging) {
  Device& d = *staged_;
  // 64 MiB + a bit: more than one staging chunk, at an odd offset.
  const uint64_t n = (64ull << 20) + 12345;
  auto b = d.alloc(n + 7);
  ASSERT_EQ(dynamic_cast<const VulkanBuffer&>(*b).mapped(), nullptr) << "device-local memory was mapped anyway";
  auto data = random_bytes(n, 99);
  d.upload(*b, data.data(), n, 7);
  std::vector<uint8_t> back(n);
  d.download(*b, back.data(), n, 7);
  EXPECT_TRUE(back == data) << "staged round trip of " << n << " bytes differs";

  auto w = d.alloc(4001 * 4);
  d.fill(*w, kPoison);
  auto words = download_vector<uint32_t>(d, *w, 4001);
  EXPECT_EQ(words, std::vector<uint32_t>(4001, kPoison));

  auto c = d.alloc(4001 * 4);
  auto s = d.record();
  s->fill(BufferView(w, 0, 2000 * 4), 5u);
  s->barrier();
  s->copy(BufferView(w), BufferView(c));
  d.run(*s);
  auto got = download_vector<uint32_t>(d, *c, 4001);
  for (size_t i = 0; i < 4001; ++i) ASSERT_EQ(got[i], i < 2000 ? 5u : kPoison) << i;
}

}  // namespace
}  // namespace spire::rt::vulkan::test
