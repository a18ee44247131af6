// Buffers and synchronous transfers: round trips at odd sizes and offsets, fills, both memory kinds, limits.
#include <numeric>
#include <random>
#include <string>

#include "runtime/vulkan/vulkan_buffer.h"
#include "tests/vulkan/vulkan_test_fixture.h"

namespace spire::rt::vulkan::test {
namespace {

class BufferTest : public VulkanTest, public ::testing::WithParamInterface<Memory> {};

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

TEST_P(BufferTest, RoundTripOddSizes) {
  for (uint64_t n : {1ull, 3ull, 4ull, 5ull, 255ull, 4097ull, 1000003ull}) {
    SCOPED_TRACE(n);
    auto b = dev().alloc(n, GetParam());
    EXPECT_EQ(b->size(), n);
    EXPECT_EQ(b->memory(), GetParam());
    auto data = random_bytes(n, uint32_t(n));
    dev().upload(*b, data.data(), n);
    std::vector<uint8_t> back(n, 0);
    dev().download(*b, back.data(), n);
    EXPECT_EQ(back, data);
  }
}

TEST_P(BufferTest, UploadAndDownloadAtOffsets) {
  const uint64_t n = 1001;
  auto b = dev().alloc(n, GetParam());
  std::vector<uint8_t> zeros(n, 0);
  dev().upload(*b, zeros.data(), n);
  auto part = random_bytes(333, 7);
  dev().upload(*b, part.data(), part.size(), 17);  // unaligned offset
  std::vector<uint8_t> all(n);
  dev().download(*b, all.data(), n);
  std::vector<uint8_t> expected = zeros;
  std::copy(part.begin(), part.end(), expected.begin() + 17);
  EXPECT_EQ(all, expected);
  std::vector<uint8_t> middle(100);
  dev().download(*b, middle.data(), 100, 50);
  EXPECT_TRUE(std::equal(middle.begin(), middle.end(), expected.begin() + 50));
}

TEST_P(BufferTest, TransfersPastTheEndThrow) {
  auto b = dev().alloc(64, GetParam());
  std::vector<uint8_t> data(65);
  EXPECT_THROW(dev().upload(*b, data.data(), 65), rt::Error);
  EXPECT_THROW(dev().upload(*b, data.data(), 8, 60), rt::Error);
  EXPECT_THROW(dev().download(*b, data.data(), 1, 64), rt::Error);
  EXPECT_NO_THROW(dev().download(*b, data.data(), 0, 64));
}

TEST_P(BufferTest, FillSetsEveryWord) {
  const size_t words = 12345;
  auto b = dev().alloc(words * 4, GetParam());
  dev().fill(*b, kPoison);
  auto v = download_vector<uint32_t>(dev(), *b, words);
  for (size_t i = 0; i < words; ++i) ASSERT_EQ(v[i], kPoison) << "word " << i;
  dev().fill(*b, float_bits(1.5f));
  auto f = download_vector<float>(dev(), *b, words);
  for (size_t i = 0; i < words; ++i) ASSERT_EQ(f[i], 1.5f) << "word " << i;
}

INSTANTIATE_TEST_SUITE_P(Memory, BufferTest, ::testing::Values(Memory::DeviceLocal, Memory::HostVisible),
                         [](const auto& info) { return info.param == Memory::DeviceLocal ? "DeviceLocal" : "HostVisible"; });

using BufferLimitTest = VulkanTest;

TEST_F(BufferLimitTest, OneTebibyteIsOutOfMemory) {
  const uint64_t tib = 1ull << 40;
  try {
    dev().alloc(tib);
    FAIL() << "a 1 TiB allocation succeeded";
  } catch (const rt::OutOfMemory& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(std::to_string(tib)), std::string::npos) << msg;
    EXPECT_NE(msg.find(dev().info().id), std::string::npos) << msg;
  }
  EXPECT_THROW(dev().alloc(tib, Memory::HostVisible), rt::OutOfMemory);
}

TEST_F(BufferLimitTest, ZeroByteBufferIsUsable) {
  auto b = dev().alloc(0);
  EXPECT_EQ(b->size(), 0u);
  EXPECT_NO_THROW(dev().upload(*b, nullptr, 0));
  EXPECT_NO_THROW(dev().fill(*b, 0));
}

}  // namespace
}  // namespace spire::rt::vulkan::test

namespace spire::rt::vulkan::test {
namespace {

// Discrete GPUs keep device-local memory out of the host's reach: transfers then go through a staging buffer.
// SPIRE_VULKAN_FORCE_STAGING=1 takes that path on any device, so lavapipe tests it too.
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
