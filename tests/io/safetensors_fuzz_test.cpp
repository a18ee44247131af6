// safetensors: random and mutated inputs (fixed seeds) either parse or throw FormatError; nothing crashes,
// nothing else is thrown. Run under -DSPIRE_ASAN=ON to also catch out-of-bounds reads and UB.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "io/safetensors.h"
#include "tests/io/st_test_util.h"

namespace spire::io {
namespace {

using testing::raw_file;

// Returns true if parsed, false on FormatError; any other exception fails the test.
bool parses(const std::vector<uint8_t>& bytes) {
  try {
    const auto file = parse_safetensors(bytes, "fuzz");
    // A file that parses must satisfy the invariants the reader promises.
    for (const auto& t : file.tensors) {
      EXPECT_EQ(t.data.size(), static_cast<size_t>(t.element_count()) * st_dtype_bytes(t.dtype));
    }
    return true;
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("fuzz: ", 0), 0u) << e.what();
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return false;
  }
}

std::vector<uint8_t> valid_file() {
  SafetensorsFile file;
  file.metadata = {{"format", "pt"}};
  file.tensors.push_back({"convnet.0.weight", StDtype::F32, {2, 1, 2, 2}, std::vector<uint8_t>(32, 0x3f)});
  file.tensors.push_back({"convnet.0.bias", StDtype::F32, {2}, std::vector<uint8_t>(8, 0x40)});
  file.tensors.push_back({"steps", StDtype::I64, {}, std::vector<uint8_t>(8, 1)});
  return serialize_safetensors(file);
}

TEST(SafetensorsFuzz, RandomBytesNeverCrash) {
  std::mt19937 rng(12345);
  int parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes(rng() % 96);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    // Half the time, make the length field plausible so the JSON parser sees the random bytes too.
    if (bytes.size() >= 8 && (i % 2) == 0) {
      const uint64_t n = rng() % (bytes.size() - 7);
      for (int k = 0; k < 8; ++k) bytes[size_t(k)] = static_cast<uint8_t>(n >> (8 * k));
      if (bytes.size() > 8) bytes[8] = '{';
    }
    parsed += parses(bytes);
  }
  EXPECT_LT(parsed, 3000);
}

TEST(SafetensorsFuzz, RandomJsonishHeadersNeverCrash) {
  // Headers built from the characters safetensors headers are made of, so that many reach deep checks.
  const std::string alphabet = "{}[],:\"0123456789-.eE dtypeshapdata_offsF32I64U8__metadata__";
  std::mt19937 rng(777);
  for (int i = 0; i < 3000; ++i) {
    std::string header = "{";
    const size_t len = rng() % 80;
    for (size_t k = 0; k < len; ++k) header += alphabet[rng() % alphabet.size()];
    std::vector<uint8_t> data(rng() % 16, 0xab);
    parses(raw_file(header, data));
  }
}

TEST(SafetensorsFuzz, MutatedValidFilesNeverCrash) {
  const auto valid = valid_file();
  ASSERT_TRUE(parses(valid));
  std::mt19937 rng(2024);
  int parsed = 0;
  for (int i = 0; i < 4000; ++i) {
    auto bytes = valid;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % bytes.size();
      switch (rng() % 4) {
        case 0: bytes[pos] = static_cast<uint8_t>(rng()); break;                 // overwrite
        case 1: bytes[pos] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;    // flip a bit
        case 2: bytes.insert(bytes.begin() + static_cast<ptrdiff_t>(pos), static_cast<uint8_t>(rng())); break;
        case 3: if (bytes.size() > 1) bytes.erase(bytes.begin() + static_cast<ptrdiff_t>(pos)); break;
      }
    }
    parsed += parses(bytes);
  }
  // Flips inside tensor data keep the file valid, so some parse; most edits hit the header and must not.
  EXPECT_GT(parsed, 0);
  EXPECT_LT(parsed, 4000);
}

}  // namespace
}  // namespace spire::io
