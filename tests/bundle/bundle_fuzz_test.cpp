// The bundle loader fuzzed under AddressSanitizer and UBSan (this executable is built with them whatever the
// build type): random damage to a valid bundle, resealed with a correct checksum so it reaches the parser and
// the validator, must be read or refused with a BundleError, never crash, read out of bounds or overflow.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "bundle/bundle_file.h"
#include "tests/bundle/sample_bundle.h"

namespace spire::bundle {
namespace {

TEST(BundleFuzz, DamagedBundlesAreReadOrRefused) {
  const std::vector<uint8_t> good = serialize(testing_support::sample_bundle());
  std::mt19937_64 rng(20261123);
  size_t read = 0, refused = 0;
  const int iterations = 20000;
  for (int i = 0; i < iterations; ++i) {
    std::vector<uint8_t> bytes = good;
    const int kind = int(rng() % 4);
    const size_t payload = bytes.size() - kBundleHeaderBytes;
    if (kind == 0) {  // a few random bytes
      for (int n = 1 + int(rng() % 4); n > 0; --n) bytes[kBundleHeaderBytes + rng() % payload] = uint8_t(rng());
    } else if (kind == 1) {  // a huge or negative 64-bit count or size somewhere
      const uint64_t v = rng() % 2 ? ~uint64_t(0) - rng() % 16 : uint64_t(1) << (rng() % 64);
      const size_t at = kBundleHeaderBytes + rng() % (payload - 8);
      std::memcpy(bytes.data() + at, &v, 8);
    } else if (kind == 2) {  // truncated, header length made to agree
      bytes.resize(kBundleHeaderBytes + rng() % payload);
      const uint64_t len = bytes.size() - kBundleHeaderBytes;
      std::memcpy(bytes.data() + 16, &len, 8);
    } else {  // a run of bytes duplicated in place
      const size_t from = kBundleHeaderBytes + rng() % payload, n = 1 + rng() % 32;
      std::vector<uint8_t> run(bytes.begin() + ptrdiff_t(from), bytes.begin() + ptrdiff_t(std::min(bytes.size(), from + n)));
      bytes.insert(bytes.begin() + ptrdiff_t(from), run.begin(), run.end());
      const uint64_t len = bytes.size() - kBundleHeaderBytes;
      std::memcpy(bytes.data() + 16, &len, 8);
    }
    const uint64_t sum =
        payload_checksum(std::span<const uint8_t>(bytes).subspan(kBundleHeaderBytes), kBundleFormatVersion);
    std::memcpy(bytes.data() + 24, &sum, 8);
    try {
      const Bundle b = parse_bundle(bytes, "fuzz.spire");
      // What is read must be self-consistent: serializing it again and reading that back agrees.
      EXPECT_EQ(serialize(parse_bundle(serialize(b), "again")), serialize(b));
      ++read;
    } catch (const BundleError&) {
      ++refused;
    }
  }
  EXPECT_EQ(read + refused, size_t(iterations));
  EXPECT_GT(refused, size_t(iterations / 2));
  std::printf("%zu damaged bundles: %zu refused with a BundleError, %zu read\n", size_t(iterations), refused, read);
}

}  // namespace
}  // namespace spire::bundle
