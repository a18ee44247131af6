// Command streams without kernels: fills and copies recorded once and replayed, barriers, timestamps, fences.
#include <numeric>

#include "tests/vulkan/vulkan_test_fixture.h"

namespace spire::rt::vulkan::test {
namespace {

using StreamTest = VulkanTest;

std::vector<uint32_t> iota_words(size_t n, uint32_t start) {
  std::vector<uint32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST_F(StreamTest, FillThenCopyWithBarrier) {
  const size_t n = 1000;
  auto a = dev().alloc(n * 4);
  auto b = dev().alloc(n * 4, Memory::HostVisible);
  dev().fill(*b, kPoison);
  auto s = dev().record();
  s->fill(BufferView(a), 0x12345678u);
  s->barrier();
  s->copy(BufferView(a, 0, 400 * 4), BufferView(b, 100 * 4));  // a[0..400) -> b[100..500)
  dev().run(*s);
  auto v = download_vector<uint32_t>(dev(), *b, n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], (i >= 100 && i < 500) ? 0x12345678u : kPoison) << i;
}

TEST_F(StreamTest, PartialFillAndCopyAtOddByteOffsets) {
  auto a = dev().alloc(103);
  auto b = dev().alloc(103);
  std::vector<uint8_t> bytes(103);
  std::iota(bytes.begin(), bytes.end(), 0);
  dev().upload(*a, bytes.data(), bytes.size());
  dev().fill(*b, 0);
  auto s = dev().record();
  s->copy(BufferView(a, 3, 50), BufferView(b, 7));  // copies have no alignment rule
  s->barrier();
  s->fill(BufferView(b, 64, 8), 0xFFFFFFFFu);
  s->fill(BufferView(b, 100), 0xABABABABu);  // a ragged tail up to the end of the buffer
  dev().run(*s);
  std::vector<uint8_t> got(103);
  dev().download(*b, got.data(), got.size());
  for (size_t i = 0; i < 103; ++i) {
    uint8_t want = 0;
    if (i >= 7 && i < 57) want = uint8_t(i - 7 + 3);
    if (i >= 64 && i < 72) want = 0xFF;
    if (i >= 100) want = 0xAB;
    ASSERT_EQ(got[i], want) << "byte " << i;
  }
}

TEST_F(StreamTest, ReplayedStreamRepeatsItsWork) {
  // Each replay copies a -> b then b -> c; refreshing a between submissions proves the work really reruns.
  const size_t n = 257;
  auto a = dev().alloc(n * 4);
  auto b = dev().alloc(n * 4);
  auto c = dev().alloc(n * 4);
  auto s = dev().record();
  s->copy(BufferView(a), BufferView(b));
  s->barrier();
  s->copy(BufferView(b), BufferView(c));
  s->finish();
  for (uint32_t round = 0; round < 4; ++round) {
    auto data = iota_words(n, round * 1000);
    dev().upload(*a, data.data(), n * 4);
    dev().fill(*c, kPoison);
    auto fence = dev().submit(*s);
    fence->wait();
    EXPECT_TRUE(fence->ready());
    EXPECT_EQ(download_vector<uint32_t>(dev(), *c, n), data) << "round " << round;
  }
}

TEST_F(StreamTest, SubmittingAgainWaitsForThePreviousSubmission) {
  auto a = dev().alloc(1 << 20);
  auto b = dev().alloc(1 << 20);
  auto s = dev().record();
  s->copy(BufferView(a), BufferView(b));
  auto f1 = dev().submit(*s);
  auto f2 = dev().submit(*s);  // must not make the command buffer pending twice (validation would say so)
  f2->wait();
  EXPECT_TRUE(f1->ready());
  EXPECT_TRUE(f2->ready());
}

TEST_F(StreamTest, FinishedStreamRefusesMoreWork) {
  auto a = dev().alloc(64);
  auto s = dev().record();
  s->fill(BufferView(a), 1);
  s->finish();
  EXPECT_THROW(s->fill(BufferView(a), 2), rt::Error);
  EXPECT_THROW(s->barrier(), rt::Error);
  EXPECT_THROW(s->timestamp(), rt::Error);
  dev().run(*s);
  EXPECT_EQ(download_vector<uint32_t>(dev(), *a, 16), std::vector<uint32_t>(16, 1u));
}

TEST_F(StreamTest, BadCopiesAndFillsThrow) {
  auto a = dev().alloc(64);
  auto b = dev().alloc(32);
  auto s = dev().record();
  EXPECT_THROW(s->copy(BufferView(a), BufferView(b)), rt::Error);              // 64 bytes into 32
  EXPECT_THROW(s->copy(BufferView(a, 0, 16), BufferView(b, 0, 8)), rt::Error); // sizes differ
  EXPECT_THROW(s->copy(BufferView(a, 60, 8), BufferView(b)), rt::Error);       // source overrun
  EXPECT_THROW(s->copy(BufferView(a, 0, 16), BufferView(a, 8)), rt::Error);    // overlap
  EXPECT_THROW(s->fill(BufferView(a, 2, 8), 0), rt::Error);                    // misaligned offset
  EXPECT_THROW(s->fill(BufferView(a, 0, 6), 0), rt::Error);                    // partial word, not at the end
  EXPECT_THROW(s->fill(BufferView(a, 0, 68), 0), rt::Error);                   // overrun
  EXPECT_THROW(s->copy(BufferView(), BufferView(b)), rt::Error);               // null buffer
}

TEST_F(StreamTest, TimestampsAreOrderedAndElapsedIsNonNegative) {
  auto a = dev().alloc(4 << 20);
  auto b = dev().alloc(4 << 20);
  auto s = dev().record();
  uint32_t t0 = s->timestamp();
  s->fill(BufferView(a), 7);
  s->barrier();
  uint32_t t1 = s->timestamp();
  s->copy(BufferView(a), BufferView(b));
  uint32_t t2 = s->timestamp();
  EXPECT_EQ(t0, 0u);
  EXPECT_EQ(t1, 1u);
  EXPECT_EQ(t2, 2u);
  EXPECT_THROW(s->elapsed_ms(t0, t1), rt::Error) << "no submission yet";
  for (int round = 0; round < 3; ++round) {
    dev().run(*s);
    double a01 = s->elapsed_ms(t0, t1), a12 = s->elapsed_ms(t1, t2), a02 = s->elapsed_ms(t0, t2);
    EXPECT_GE(a01, 0.0);
    EXPECT_GE(a12, 0.0);
    EXPECT_NEAR(a02, a01 + a12, 1e-6);
    EXPECT_LT(a02, 10000.0);  // a few MiB take milliseconds, not seconds
  }
  EXPECT_THROW(s->elapsed_ms(0, 3), rt::Error);
}

TEST_F(StreamTest, EmptyStreamRuns) {
  auto s = dev().record();
  EXPECT_NO_THROW(dev().run(*s));
  EXPECT_NO_THROW(dev().run(*s));
  dev().wait_idle();
}

TEST_F(StreamTest, DestroyingAStreamWhileItsFenceLivesIsSafe) {
  auto a = dev().alloc(1 << 20);
  std::unique_ptr<Fence> fence;
  {
    auto s = dev().record();
    s->fill(BufferView(a), 3);
    fence = dev().submit(*s);
  }
  EXPECT_TRUE(fence->ready());
  fence->wait();
  EXPECT_EQ(download_vector<uint32_t>(dev(), *a, 4), std::vector<uint32_t>(4, 3u));
}

}  // namespace
}  // namespace spire::rt::vulkan::test
