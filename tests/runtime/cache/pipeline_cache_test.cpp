// The Vulkan pipeline cache on disk (runtime/vulkan/vulkan_pipeline_cache.h), on whatever Vulkan device is present
// (lavapipe in CI) with the validation layer on: the first run writes the file, the next loads it; a damaged or
// foreign file gives one warning, the run still works and the file is replaced; SPIRE_NO_DISK_CACHE=1 touches
// nothing; processes closing at once leave a valid file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "backends/compile_kernel.h"
#include "ir/kernel/builder.h"
#include "runtime/cache_file.h"
#include "runtime/cache_record.h"
#include "runtime/vulkan/vulkan_device.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/runtime/cache/temp_folder.h"

namespace spire::rt::cache_test {

namespace {

std::string first_vulkan_id() {
  for (const auto& d : list_devices())
    if (d.backend == Backend::Vulkan) return d.id;
  return {};
}

// y[i] = x[i] * c: each c makes different SPIR-V, so a new pipeline.
kir::Kernel scale_by(int c) {
  using namespace kir;
  KernelBuilder kb(fmt::format("scale_by_{}", c), 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = Val(x[i]) * double(c); });
  return kb.finish();
}

// Opens the first Vulkan device, loads the kernels scale_by(first) .. scale_by(first + count - 1), runs the last
// one and checks its result, and closes the device (which saves the cache). Returns the stats seen before closing.
vulkan::PipelineCacheStats open_load_close(int first, int count) {
  auto dev = open_device(first_vulkan_id());
  auto* vk = dynamic_cast<vulkan::VulkanDevice*>(dev.get());
  if (!vk) throw std::logic_error("the first Vulkan device is not a VulkanDevice");
  std::shared_ptr<Kernel> k;
  for (int c = first; c < first + count; ++c) k = backends::compile_and_load(*dev, scale_by(c));
  const uint32_t n = 100;
  std::vector<float> x(n), y(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i);
  auto xb = dev->alloc(n * 4), yb = dev->alloc(n * 4);
  dev->upload(*xb, x.data(), n * 4);
  dev->fill(*yb, 0xDEADBEEFu);
  BufferView views[] = {BufferView(xb), BufferView(yb)};
  if (k) dev->dispatch_now(*k, views, ScalarArgs().u32(n), Grid::threads(n, 64));
  dev->download(*yb, y.data(), n * 4);
  const int c = first + count - 1;
  for (uint32_t i = 0; k && i < n; ++i)
    if (y[i] != float(i) * float(c)) throw std::runtime_error(fmt::format("wrong result at {}: {}", i, y[i]));
  return vk->pipeline_cache_stats();
}

// Checks a cache file the way a reader independent of spire's loader would: envelope, then the Vulkan header
// inside, whose pipelineCacheUUID must be the one the file is named after. "" when it is good.
std::string file_problem(const std::filesystem::path& file) {
  std::optional<std::string> bytes = read_whole_file(file);
  if (!bytes) return "no file";
  UnwrappedRecord r = unwrap_cache_record(CacheKind::VulkanPipelineCache, *bytes);
  if (!r.problem.empty()) return r.problem;
  if (r.payload.size() < 32) return "no Vulkan header";
  uint32_t header_size, version;
  std::memcpy(&header_size, r.payload.data(), 4);
  std::memcpy(&version, r.payload.data() + 4, 4);
  if (header_size < 32 || version != 1) return fmt::format("Vulkan header size {} version {}", header_size, version);
  std::string uuid;
  for (int i = 0; i < 16; ++i) uuid += fmt::format("{:02x}", uint8_t(r.payload[16 + i]));
  const std::string name = file.filename().string();
  if (name.find(uuid + ".bin") == std::string::npos) return "the UUID inside is not the one in the name " + name;
  return "";
}

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class PipelineCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (first_vulkan_id().empty()) GTEST_SKIP() << "no Vulkan device present (install mesa-vulkan-drivers for lavapipe)";
    messages_before_ = vulkan::validation_message_count();
  }
  void TearDown() override {
    EXPECT_EQ(vulkan::validation_message_count(), messages_before_)
        << "the Vulkan validation layer reported messages during this test (printed above on stderr)";
  }
  std::filesystem::path the_cache_file() {
    auto files = folder_.files_containing("vulkan-pipelines-");
    return files.size() == 1 ? files[0] : std::filesystem::path();
  }
  TempFolder folder_;
  ScopedEnv cache_dir_{"SPIRE_CACHE_DIR", folder_.path().string()};
  ScopedEnv enabled_{"SPIRE_NO_DISK_CACHE", std::nullopt};

 private:
  uint64_t messages_before_ = 0;
};

TEST_F(PipelineCacheTest, TheFirstRunWritesTheFileAndTheNextLoadsIt) {
  vulkan::PipelineCacheStats first = open_load_close(1, 3);
  EXPECT_TRUE(first.enabled);
  EXPECT_FALSE(first.loaded);
  EXPECT_EQ(first.pipelines_created, 3u);
  const auto file = the_cache_file();
  ASSERT_FALSE(file.empty()) << "no pipeline cache file in " << folder_.path();
  EXPECT_EQ(first.file, file);
  EXPECT_EQ(file_problem(file), "");

  vulkan::PipelineCacheStats second = open_load_close(1, 3);
  EXPECT_TRUE(second.loaded);
  const std::string payload(unwrap_cache_record(CacheKind::VulkanPipelineCache, *read_whole_file(file)).payload);
  EXPECT_EQ(second.loaded_bytes, payload.size());
}

TEST_F(PipelineCacheTest, ARunThatCreatesNoPipelineWritesNothing) {
  vulkan::PipelineCacheStats s = open_load_close(1, 0);
  EXPECT_EQ(s.pipelines_created, 0u);
  EXPECT_TRUE(the_cache_file().empty());
}

TEST_F(PipelineCacheTest, ARunThatAddsNothingLeavesTheFileAlone) {
  open_load_close(1, 2);
  const auto file = the_cache_file();
  ASSERT_FALSE(file.empty());
  struct stat before {}, after {};
  ASSERT_EQ(::stat(file.c_str(), &before), 0);
  open_load_close(1, 2);  // the same pipelines: every one is already in the cache
  ASSERT_EQ(::stat(file.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino) << "the file was replaced although the cache gained nothing";
}

TEST_F(PipelineCacheTest, ADamagedOrForeignFileGivesOneWarningAndIsReplaced) {
  open_load_close(1, 1);
  const auto file = the_cache_file();
  ASSERT_FALSE(file.empty());
  const std::string good = *read_whole_file(file);
  std::string payload(unwrap_cache_record(CacheKind::VulkanPipelineCache, good).payload);
  std::string bad_sum = good;
  bad_sum.back() = char(bad_sum.back() ^ 0x40);
  std::string other_device = payload;
  other_device[16] = char(other_device[16] ^ 0xff);  // first byte of pipelineCacheUUID
  std::string random(4096, '\0');
  uint32_t state = 12345;
  for (char& ch : random) ch = char((state = state * 1664525u + 1013904223u) >> 24);
  struct Case {
    const char* name;
    std::string bytes;
  } cases[] = {{"random bytes", random},
               {"truncated", good.substr(0, good.size() - 7)},
               {"wrong checksum", bad_sum},
               {"another device's data", wrap_cache_record(CacheKind::VulkanPipelineCache, other_device)},
               {"an empty file", ""}};
  int next_kernel = 10;
  for (const Case& c : cases) {
    write_file_atomically(file, c.bytes);
    ::testing::internal::CaptureStderr();
    vulkan::PipelineCacheStats s;
    EXPECT_NO_THROW(s = open_load_close(next_kernel, 2)) << c.name;  // and it computes the right result
    next_kernel += 2;
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(s.loaded) << c.name;
    EXPECT_EQ(count_of(err, "spire: warning: ignoring the pipeline cache " + file.string() + ": "), 1)
        << c.name << "; stderr:\n" << err;
    EXPECT_EQ(count_of(err, "spire: warning"), 1) << c.name << "; stderr:\n" << err;
    EXPECT_EQ(file_problem(file), "") << c.name << ": the damaged file was not replaced";
  }
  EXPECT_TRUE(open_load_close(1, 1).loaded) << "the replaced file loads again";
}

TEST_F(PipelineCacheTest, NoDiskCacheReadsAndWritesNothing) {
  ScopedEnv off("SPIRE_NO_DISK_CACHE", "1");
  const auto damaged = folder_.path() / "vulkan-pipelines-damaged.bin";
  write_file_atomically(damaged, "garbage");
  ::testing::internal::CaptureStderr();
  vulkan::PipelineCacheStats s = open_load_close(1, 2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(s.enabled);
  EXPECT_EQ(count_of(err, "spire: warning"), 0) << err;
  EXPECT_EQ(folder_.files_containing("vulkan-pipelines-"), std::vector<std::filesystem::path>{damaged});
  EXPECT_EQ(read_whole_file(damaged), std::string("garbage"));
}

// Processes that close their devices at the same moment, each having created pipelines of its own: the file is
// valid afterwards (one of them won), and no temporary file is left. The children are this executable started
// again in child mode (pipeline_cache_child below), so that none inherits this process's Vulkan state.
TEST_F(PipelineCacheTest, ProcessesClosingAtOnceLeaveAValidFile) {
  constexpr int kChildren = 4, kRounds = 3;
  for (int round = 0; round < kRounds; ++round) {
    std::error_code ec;
    if (auto f = the_cache_file(); !f.empty()) std::filesystem::remove(f, ec);  // every child then has news to save
    int ready[2], go[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(go), 0);
    std::vector<pid_t> children;
    for (int c = 0; c < kChildren; ++c) {
      pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(ready[0]);
        ::close(go[1]);
        std::string first = std::to_string(100 + round * 10 + c * 2), ready_fd = std::to_string(ready[1]),
                    go_fd = std::to_string(go[0]);
        ::execl("/proc/self/exe", "child", "--pipeline-cache-child", first.c_str(), ready_fd.c_str(), go_fd.c_str(),
                static_cast<char*>(nullptr));
        ::_exit(127);
      }
      children.push_back(pid);
    }
    ::close(ready[1]);
    ::close(go[0]);
    char byte;
    for (int c = 0; c < kChildren; ++c) ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "a child failed before closing";
    const std::string go_bytes(kChildren, 'g');
    ASSERT_EQ(::write(go[1], go_bytes.data(), go_bytes.size()), ssize_t(go_bytes.size()));  // all close at once
    ::close(go[1]);
    ::close(ready[0]);
    for (pid_t pid : children) {
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round << ": a child failed";
    }
    const auto file = the_cache_file();
    ASSERT_FALSE(file.empty()) << "round " << round;
    EXPECT_EQ(file_problem(file), "") << "round " << round;
    EXPECT_TRUE(folder_.files_containing(".tmp.").empty()) << "round " << round;
  }
}

}  // namespace

// Child mode of ProcessesClosingAtOnceLeaveAValidFile: `--pipeline-cache-child FIRST READY_FD GO_FD`. Opens the
// device, creates two pipelines, says so on READY_FD, waits for a byte on GO_FD, closes the device. Exit status 0
// when all went well and the validation layer said nothing.
int pipeline_cache_child(int argc, char** argv) {
  if (argc != 5) return 2;
  const int first = std::atoi(argv[2]), ready = std::atoi(argv[3]), go = std::atoi(argv[4]);
  try {
    auto dev = open_device(first_vulkan_id());
    for (int c = first; c < first + 2; ++c) backends::compile_and_load(*dev, scale_by(c));
    char byte = 'r';
    if (::write(ready, &byte, 1) != 1) return 3;
    if (::read(go, &byte, 1) != 1) return 4;
    dev.reset();  // saves the pipeline cache
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipeline cache child: %s\n", e.what());
    return 1;
  }
  return vulkan::validation_message_count() == 0 ? 0 : 5;
}

}  // namespace spire::rt::cache_test
