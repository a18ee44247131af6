// runtime/cache_record.h: spire's envelope around driver cache data. Every way a file can be damaged or foreign is
// refused with a reason before its bytes could reach a driver, and loading warns exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>

#include "runtime/cache_file.h"
#include "runtime/cache_record.h"
#include "tests/runtime/cache/temp_folder.h"

namespace spire::rt::cache_test {
namespace {

constexpr char kPayloadBytes[] = "some driver data\0with a NUL and more bytes after it";
const std::string kPayload(kPayloadBytes, sizeof(kPayloadBytes) - 1);

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CacheRecord, Fnv1a64MatchesTheReferenceVectors) {
  // From the FNV reference test suite (Fowler, Noll, Vo).
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(CacheRecord, TheHeaderIsLaidOutAsDocumented) {
  const std::string r = wrap_cache_record(CacheKind::VulkanPipelineCache, "xyz");
  ASSERT_EQ(r.size(), kCacheHeaderBytes + 3);
  EXPECT_EQ(r.substr(0, 8), "SPIRECAC");
  EXPECT_EQ(r.substr(8, 4), std::string("\x01\x00\x00\x00", 4));
  EXPECT_EQ(r.substr(12, 4), "VKPC");
  EXPECT_EQ(r.substr(16, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  const uint64_t sum = fnv1a64("xyz");
  for (int i = 0; i < 8; ++i) EXPECT_EQ(uint8_t(r[24 + i]), uint8_t(sum >> (8 * i))) << "checksum byte " << i;
  EXPECT_EQ(r.substr(32), "xyz");
  EXPECT_EQ(wrap_cache_record(CacheKind::CudaCubin, "").substr(12, 4), "CUBN");
}

TEST(CacheRecord, AnIntactRecordGivesItsPayloadBack) {
  const std::string& payload = kPayload;
  UnwrappedRecord r = unwrap_cache_record(CacheKind::CudaCubin, wrap_cache_record(CacheKind::CudaCubin, payload));
  EXPECT_EQ(r.problem, "");
  EXPECT_EQ(r.payload, payload);
  UnwrappedRecord empty = unwrap_cache_record(CacheKind::CudaCubin, wrap_cache_record(CacheKind::CudaCubin, ""));
  EXPECT_EQ(empty.problem, "");
  EXPECT_EQ(empty.payload, "");
}

TEST(CacheRecord, EveryTruncationIsRefused) {
  const std::string r = wrap_cache_record(CacheKind::VulkanPipelineCache, kPayload);
  for (size_t n = 0; n < r.size(); ++n) {
    std::string problem = unwrap_cache_record(CacheKind::VulkanPipelineCache, r.substr(0, n)).problem;
    EXPECT_TRUE(mentions(problem, "truncated")) << n << " bytes: " << problem;
  }
}

TEST(CacheRecord, AnyFlippedByteIsRefused) {
  const std::string r = wrap_cache_record(CacheKind::VulkanPipelineCache, kPayload);
  for (size_t at = 0; at < r.size(); ++at) {
    std::string bad = r;
    bad[at] = char(bad[at] ^ 0x20);
    std::string problem = unwrap_cache_record(CacheKind::VulkanPipelineCache, bad).problem;
    EXPECT_FALSE(problem.empty()) << "byte " << at << " flipped went unnoticed";
    if (at >= 24) {
      EXPECT_TRUE(mentions(problem, "checksum")) << at << ": " << problem;
    }
  }
}

TEST(CacheRecord, ForeignFilesAreRefusedWithTheirReason) {
  const std::string r = wrap_cache_record(CacheKind::VulkanPipelineCache, kPayload);
  std::mt19937 rng(7);
  std::string noise(1000, '\0');
  for (char& c : noise) c = char(rng());
  EXPECT_TRUE(mentions(unwrap_cache_record(CacheKind::VulkanPipelineCache, noise).problem, "not a spire cache file"));

  std::string newer = r;
  newer[8] = 2;
  EXPECT_TRUE(mentions(unwrap_cache_record(CacheKind::VulkanPipelineCache, newer).problem, "format version 2"));

  std::string problem = unwrap_cache_record(CacheKind::CudaCubin, r).problem;
  EXPECT_TRUE(mentions(problem, "holds a Vulkan pipeline cache, not a CUDA module")) << problem;

  EXPECT_TRUE(mentions(unwrap_cache_record(CacheKind::VulkanPipelineCache, r + "x").problem, "trailing bytes"));
}

// What load_cache_record printed to a warning stream.
struct Warnings {
  std::FILE* stream = std::tmpfile();
  ~Warnings() { std::fclose(stream); }
  std::string text() {
    std::fflush(stream);
    std::rewind(stream);
    std::string s;
    char buf[512];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), stream)) > 0) s.append(buf, n);
    return s;
  }
};

TEST(CacheRecord, LoadingADamagedFileWarnsOnceAndGivesNothing) {
  TempFolder t;
  const auto file = t.path() / "x.bin";
  struct Case {
    const char* name;
    std::string bytes;
    const char* reason;
  };
  std::string good = wrap_cache_record(CacheKind::VulkanPipelineCache, kPayload);
  std::string bad_sum = good;
  bad_sum.back() = char(bad_sum.back() ^ 1);
  std::vector<Case> cases = {{"random bytes", std::string(300, '\x5a'), "not a spire cache file"},
                             {"truncated", good.substr(0, good.size() - 5), "truncated"},
                             {"wrong checksum", bad_sum, "checksum"}};
  for (const Case& c : cases) {
    write_file_atomically(file, c.bytes);
    Warnings w;
    EXPECT_EQ(load_cache_record(file, CacheKind::VulkanPipelineCache, "pipeline cache", w.stream), std::nullopt) << c.name;
    const std::string text = w.text();
    const std::string expected_start = "spire: warning: ignoring the pipeline cache " + file.string() + ": ";
    EXPECT_EQ(text.rfind(expected_start, 0), 0u) << c.name << ": " << text;
    EXPECT_TRUE(mentions(text, c.reason)) << c.name << ": " << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << c.name << ": " << text;
  }
}

TEST(CacheRecord, AMissingFileIsSilentAndAStoredOneLoads) {
  TempFolder t;
  const auto file = t.path() / "sub" / "y.bin";
  Warnings w;
  EXPECT_EQ(load_cache_record(file, CacheKind::CudaCubin, "cached CUDA module", w.stream), std::nullopt);
  store_cache_record(file, CacheKind::CudaCubin, kPayload);
  EXPECT_EQ(load_cache_record(file, CacheKind::CudaCubin, "cached CUDA module", w.stream), kPayload);
  EXPECT_EQ(w.text(), "");
}

TEST(CacheRecord, AnUnreadableFileWarns) {
  TempFolder t;
  std::filesystem::create_directories(t.path() / "a-folder.bin");  // exists, cannot be read as a file
  Warnings w;
  EXPECT_EQ(load_cache_record(t.path() / "a-folder.bin", CacheKind::CudaCubin, "cached CUDA module", w.stream),
            std::nullopt);
  EXPECT_TRUE(mentions(w.text(), "spire: warning: ignoring the cached CUDA module")) << w.text();
}

}  // namespace
}  // namespace spire::rt::cache_test
