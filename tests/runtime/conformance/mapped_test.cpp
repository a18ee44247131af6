// Mapped memory (Buffer::mapped()) and the sync counts (Device::sync_counts()): what lets a caller feed and read a
// recorded stream through host-visible buffers, with the stream's own copies, at the cost of one submit and one
// wait per submission, or feed it through mapped device memory with no copy at all (lowering's streamed values are
// built on both).
#include <cstring>

#include "backends/compile_kernel.h"
#include "tests/runtime/conformance/conformance.h"
#include "tests/runtime/conformance/helpers.h"
#include "tests/runtime/conformance/kernels.h"

namespace spire::rt::conformance {
namespace {

SPIRE_CONFORMANCE_SUITE(MappedTest);

TEST_P(MappedTest, HostVisibleBytesAreTheBuffersBytes) {
  for (uint64_t n : {1ull, 5ull, 4097ull}) {
    SCOPED_TRACE(std::to_string(n) + " bytes");
    auto b = dev().alloc(n, Memory::HostVisible);
    auto* p = static_cast<uint8_t*>(b->mapped());
    ASSERT_NE(p, nullptr) << "a host-visible buffer must have a host address";
    auto written = random_bytes(n, uint32_t(n) + 3);
    std::memcpy(p, written.data(), n);
    EXPECT_EQ(download_vector<uint8_t>(dev(), *b, n), written) << "a download does not see the host's writes";
    auto d = dev().alloc(n);
    auto s = dev().record();
    s->copy(BufferView(b), BufferView(d));
    dev().run(*s);
    EXPECT_EQ(download_vector<uint8_t>(dev(), *d, n), written) << "a copy on the device does not see the host's writes";
    auto uploaded = random_bytes(n, uint32_t(n) + 4);
    dev().upload(*b, uploaded.data(), n);
    EXPECT_TRUE(std::equal(uploaded.begin(), uploaded.end(), p)) << "the host does not see an upload";
  }
}

TEST_P(MappedTest, ADeviceLocalMappingWhereThereIsOneIsTheBuffersMemory) {
  const uint64_t n = 1001;
  auto b = dev().alloc(n);
  auto* p = static_cast<uint8_t*>(b->mapped());
  if (!p) return;  // no host-visible device memory here (a discrete GPU, CUDA): nothing more to hold it to
  auto written = random_bytes(n, 9);
  std::memcpy(p, written.data(), n);
  // Read back by the device (a transfer may itself go through the mapping, which would prove nothing).
  auto h = dev().alloc(n, Memory::HostVisible);
  auto s = dev().record();
  s->copy(BufferView(b), BufferView(h));
  dev().run(*s);
  EXPECT_TRUE(std::equal(written.begin(), written.end(), static_cast<const uint8_t*>(h->mapped())));
}

// A stream that starts with a copy out of a host-visible buffer and ends with a copy into one is fed and read by
// the host in place: each submission sees what the host wrote before it and leaves its result for the host, with
// exactly one submit and one wait.
TEST_P(MappedTest, AStreamFedAndReadThroughMappedBuffersCostsOneSubmitAndOneWait) {
  const uint32_t n = 3000;
  auto k = backends::compile_and_load(dev(), accumulate(64));
  auto in = dev().alloc(n * 4, Memory::HostVisible), out = dev().alloc(n * 4, Memory::HostVisible);
  auto x = dev().alloc(n * 4), sum = dev().alloc(n * 4);
  dev().fill(*sum, float_bits(0.0f));
  auto s = dev().record();
  s->copy(BufferView(in), BufferView(x));
  s->barrier();
  BufferView views[] = {BufferView(x), BufferView(sum)};
  s->dispatch(*k, views, ScalarArgs().u32(n), Grid::threads(n, 64));
  s->barrier();
  s->copy(BufferView(sum), BufferView(out));
  s->finish();
  std::vector<float> expected(n, 0.0f);
  for (uint32_t round = 0; round < 4; ++round) {
    SCOPED_TRACE("submission " + std::to_string(round));
    auto xs = random_small_ints(n, 60 + round);
    std::memcpy(in->mapped(), xs.data(), n * 4);
    std::vector<uint32_t> poison(n, kNaNBits);
    std::memcpy(out->mapped(), poison.data(), n * 4);
    const SyncCounts before = dev().sync_counts();
    dev().submit(*s)->wait();
    const SyncCounts after = dev().sync_counts();
    EXPECT_EQ(after.submits - before.submits, 1u);
    EXPECT_EQ(after.waits - before.waits, 1u);
    for (uint32_t i = 0; i < n; ++i) expected[i] += xs[i];
    std::vector<float> got(n);
    std::memcpy(got.data(), out->mapped(), n * 4);
    ASSERT_EQ(got, expected);
  }
}

// Memory::DeviceMapped: device-local memory the host writes in place, where the device has it (lavapipe, a GPU's
// resizable BAR), else plain device-local memory that says so. A kernel reads the host's writes with no copy, one
// submission after another.
TEST_P(MappedTest, DeviceMappedMemoryIsReadByKernelsAsTheHostWroteIt) {
  const uint32_t n = 3000;
  auto x = dev().alloc(n * 4, Memory::DeviceMapped);
  ASSERT_EQ(x->size(), n * 4);
  if (dev().info().type == DeviceType::Cpu) {
    ASSERT_NE(x->mapped(), nullptr) << "a CPU device's memory is all mapped";
  }
  if (!x->mapped()) {
    EXPECT_EQ(x->memory(), Memory::DeviceLocal) << "unmapped, it must say it is plain device-local memory";
    return;
  }
  EXPECT_EQ(x->memory(), Memory::DeviceMapped);
  auto k = backends::compile_and_load(dev(), accumulate(64));
  auto sum = dev().alloc(n * 4);
  dev().fill(*sum, float_bits(0.0f));
  auto s = dev().record();
  BufferView views[] = {BufferView(x), BufferView(sum)};
  s->dispatch(*k, views, ScalarArgs().u32(n), Grid::threads(n, 64));
  s->finish();
  std::vector<float> expected(n, 0.0f);
  for (uint32_t round = 0; round < 3; ++round) {
    SCOPED_TRACE("submission " + std::to_string(round));
    auto xs = random_small_ints(n, 80 + round);
    std::memcpy(x->mapped(), xs.data(), n * 4);
    dev().submit(*s)->wait();
    for (uint32_t i = 0; i < n; ++i) expected[i] += xs[i];
    ASSERT_EQ(download_vector<float>(dev(), *sum, n), expected);
  }
}

TEST_P(MappedTest, SyncCountsCountSubmitsAndWaits) {
  auto b = dev().alloc(64);
  auto s = dev().record();
  s->fill(BufferView(b), 7);
  SyncCounts c0 = dev().sync_counts();
  auto fence = dev().submit(*s);
  SyncCounts c1 = dev().sync_counts();
  EXPECT_EQ(c1.submits - c0.submits, 1u);
  EXPECT_EQ(c1.waits, c0.waits) << "submit() must not wait";
  fence->wait();
  fence->wait();  // seen complete: returns at once, not a second wait
  SyncCounts c2 = dev().sync_counts();
  EXPECT_EQ(c2.waits - c1.waits, 1u);
  EXPECT_EQ(c2.submits, c1.submits);
  dev().wait_idle();
  SyncCounts c3 = dev().sync_counts();
  EXPECT_EQ(c3.waits - c2.waits, 1u);
  // A synchronous transfer waits at least once, whether it copies through the device or into a mapping.
  uint32_t word = 1;
  dev().upload(*b, &word, 4);
  EXPECT_GE(dev().sync_counts().waits - c3.waits, 1u);
}

}  // namespace
}  // namespace spire::rt::conformance
