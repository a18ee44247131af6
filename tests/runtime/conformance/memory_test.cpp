// Buffers and the synchronous transfers: both memory kinds at sizes that are not multiples of 4 (0 included),
// uploads and downloads at unaligned offsets, range errors, whole-buffer fills, running out of memory.
#include "tests/runtime/conformance/conformance.h"
#include "tests/runtime/conformance/helpers.h"

namespace spire::rt::conformance {
namespace {

SPIRE_CONFORMANCE_SUITE(MemoryTest);

constexpr Memory kKinds[] = {Memory::DeviceLocal, Memory::HostVisible};

std::string kind_name(Memory m) { return m == Memory::DeviceLocal ? "DeviceLocal" : "HostVisible"; }

TEST_P(MemoryTest, AllocatesEverySizeAndRoundTripsIt) {
  for (Memory kind : kKinds) {
    for (uint64_t n : {0ull, 1ull, 3ull, 4ull, 5ull, 255ull, 4097ull, 1000003ull}) {
      SCOPED_TRACE(kind_name(kind) + ", " + std::to_string(n) + " bytes");
      auto b = dev().alloc(n, kind);
      EXPECT_EQ(b->size(), n);
      EXPECT_EQ(b->memory(), kind);
      auto data = random_bytes(n, uint32_t(n) + 11);
      dev().upload(*b, data.data(), n);
      std::vector<uint8_t> back(n, 0);
      dev().download(*b, back.data(), n);
      EXPECT_TRUE(back == data) << "the round trip changed the bytes";
    }
  }
}

TEST_P(MemoryTest, ZeroByteBuffersTakeEmptyTransfersAndFills) {
  for (Memory kind : kKinds) {
    SCOPED_TRACE(kind_name(kind));
    auto b = dev().alloc(0, kind);
    EXPECT_NO_THROW(dev().upload(*b, nullptr, 0));
    EXPECT_NO_THROW(dev().download(*b, nullptr, 0));
    EXPECT_NO_THROW(dev().fill(*b, kPoison));
    auto s = dev().record();
    EXPECT_NO_THROW(s->fill(BufferView(b), kPoison));
    EXPECT_NO_THROW(s->copy(BufferView(b), BufferView(b)));
    EXPECT_NO_THROW(dev().run(*s));
  }
}

TEST_P(MemoryTest, UploadsAndDownloadsAtUnalignedOffsets) {
  for (Memory kind : kKinds) {
    SCOPED_TRACE(kind_name(kind));
    const uint64_t n = 1001;
    auto b = dev().alloc(n, kind);
    auto expected = random_bytes(n, 5);
    dev().upload(*b, expected.data(), n);
    auto part = random_bytes(333, 7);
    dev().upload(*b, part.data(), part.size(), 17);
    std::copy(part.begin(), part.end(), expected.begin() + 17);
    std::vector<uint8_t> all(n);
    dev().download(*b, all.data(), n);
    EXPECT_TRUE(all == expected) << "an upload at offset 17 wrote outside [17, 350)";
    std::vector<uint8_t> middle(101);
    dev().download(*b, middle.data(), middle.size(), 51);
    EXPECT_TRUE(std::equal(middle.begin(), middle.end(), expected.begin() + 51));
    uint8_t last = 0;
    dev().download(*b, &last, 1, n - 1);
    EXPECT_EQ(last, expected[n - 1]);
  }
}

TEST_P(MemoryTest, TransfersPastTheEndAreErrorsNamingTheDevice) {
  for (Memory kind : kKinds) {
    SCOPED_TRACE(kind_name(kind));
    auto b = dev().alloc(64, kind);
    std::vector<uint8_t> data(65);
    std::string msg = error_of([&] { dev().upload(*b, data.data(), 65); });
    EXPECT_TRUE(contains(msg, info().id)) << msg;
    EXPECT_THROW(dev().upload(*b, data.data(), 8, 60), Error);
    EXPECT_THROW(dev().upload(*b, data.data(), 1, 65), Error);
    msg = error_of([&] { dev().download(*b, data.data(), 1, 64); });
    EXPECT_TRUE(contains(msg, info().id)) << msg;
    EXPECT_THROW(dev().download(*b, data.data(), 65), Error);
    EXPECT_NO_THROW(dev().download(*b, data.data(), 0, 64)) << "an empty transfer at the very end is in range";
  }
}

// Every 32-bit word takes the pattern; a size that is not a multiple of 4 ends with the pattern's first
// (little-endian) bytes, as if the last word were cut off.
TEST_P(MemoryTest, FillWritesThePatternUpToTheLastByte) {
  for (Memory kind : kKinds) {
    for (uint64_t n : {1ull, 7ull, 4097ull, 4ull * 12345}) {
      for (uint32_t pattern : {kPoison, float_bits(1.5f), 0x44332211u}) {
        SCOPED_TRACE(kind_name(kind) + ", " + std::to_string(n) + " bytes, pattern " + std::to_string(pattern));
        auto b = dev().alloc(n, kind);
        dev().fill(*b, pattern);
        auto got = download_vector<uint8_t>(dev(), *b, n);
        for (uint64_t i = 0; i < n; ++i)
          ASSERT_EQ(got[i], uint8_t(pattern >> (8 * (i % 4)))) << "byte " << i;
      }
    }
  }
}

TEST_P(MemoryTest, HugeAllocationIsOutOfMemoryNamingSizeAndDevice) {
  const uint64_t tib = uint64_t(1) << 40;
  for (Memory kind : kKinds) {
    SCOPED_TRACE(kind_name(kind));
    try {
      dev().alloc(tib, kind);
      ADD_FAILURE() << "a 1 TiB allocation succeeded";
    } catch (const OutOfMemory& e) {
      EXPECT_TRUE(contains(e.what(), std::to_string(tib))) << e.what();
      EXPECT_TRUE(contains(e.what(), info().id)) << e.what();
    }
  }
  // The device is still usable afterwards.
  auto b = dev().alloc(16);
  dev().fill(*b, 3);
  EXPECT_EQ(download_vector<uint32_t>(dev(), *b, 4), std::vector<uint32_t>(4, 3u));
}

}  // namespace
}  // namespace spire::rt::conformance
