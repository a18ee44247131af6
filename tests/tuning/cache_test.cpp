// The tuning cache file: round trip, what a corrupt or unreadable file does (one warning, never a crash),
// concurrent writers (threads and processes) losing nothing, and keys that never cross devices or drivers.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "tests/tuning/tuning_test_util.h"
#include "tuning/tuning_cache.h"

using namespace spire;
using tuning::CacheEntry;
using tuning::DeviceKey;
using tuning::TuningCache;

namespace {

rt::DeviceInfo device_info(std::string name, std::string driver, rt::Backend backend = rt::Backend::Vulkan) {
  rt::DeviceInfo d;
  d.backend = backend;
  d.name = std::move(name);
  d.driver = std::move(driver);
  return d;
}

CacheEntry entry(const rt::DeviceInfo& d, std::string shape, std::string config = "tile_m=16,tile_n=16") {
  return CacheEntry{DeviceKey::of(d), {"matmul", std::move(shape), "f32"}, lowering::heavy::Config::parse(config), 0.25, 0.5};
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const rt::DeviceInfo kGpu = device_info("NVIDIA H100 80GB HBM3", "NVIDIA 550.54.15");

TEST(TuningCache, RoundTrip) {
  auto path = tuning_test::scratch_dir() / "sub" / "tuning.txt";  // the folder is created on save
  {
    TuningCache c(path.string());
    EXPECT_EQ(c.size(), 0u);
    c.put(entry(kGpu, "m64_k784_n120", "tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4"));
    c.put(entry(device_info("llvmpipe (LLVM 15.0.6, 256 bits)", "Mesa 22.3.6"), "m64_k784_n120"));
    c.save();
  }
  EXPECT_EQ(read(path).rfind("# spire tuning cache 1\n", 0), 0u);
  testing::internal::CaptureStderr();
  TuningCache c(path.string());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_EQ(c.size(), 2u);
  const CacheEntry* e = c.find(DeviceKey::of(kGpu), {"matmul", "m64_k784_n120", "f32"});
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->config.text(), "tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4");
  EXPECT_DOUBLE_EQ(e->ms, 0.25);
  EXPECT_DOUBLE_EQ(e->heuristic_ms, 0.5);
  auto choices = c.choices_for(kGpu);
  ASSERT_EQ(choices.configs.size(), 1u);
  EXPECT_EQ(choices.find({"matmul", "m64_k784_n120", "f32"})->text(), "tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4");
  EXPECT_FALSE(choices.find({"matmul", "m1_k1_n1", "f32"}));
}

TEST(TuningCache, AHeuristicThatCouldNotRunRoundTrips) {
  auto path = tuning_test::scratch_dir() / "tuning.txt";
  CacheEntry e = entry(kGpu, "m8_k8_n8");
  e.heuristic_ms = std::numeric_limits<double>::infinity();
  {
    TuningCache c(path.string());
    c.put(e);
    c.save();
  }
  testing::internal::CaptureStderr();
  TuningCache c(path.string());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_NE(c.find(e.device, e.key), nullptr);
  EXPECT_TRUE(std::isinf(c.find(e.device, e.key)->heuristic_ms));
}

TEST(TuningCache, MissingFileIsEmptyAndSilent) {
  testing::internal::CaptureStderr();
  TuningCache c((tuning_test::scratch_dir() / "none.txt").string());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(c.size(), 0u);
}

TEST(TuningCache, CorruptFileIsIgnoredWithOneWarningAndRewritten) {
  auto path = tuning_test::scratch_dir() / "tuning.txt";
  for (std::string junk : {std::string("\x00\x01\xff garbage\n\tand more", 21), std::string("# spire tuning cache 0\n"),
                           std::string("# spire tuning cache 1\nvulkan\tx\ty\tmatmul\n"),
                           std::string("# spire tuning cache 1\nvulkan\tx\ty\tmatmul\ts\tf32\ttile_m=\t1\t2\n"),
                           std::string("# spire tuning cache 1\nvulkan\tx\ty\tmatmul\ts\tf32\ta=1\tnan\t2\n"),
                           std::string("# spire tuning cache 1\nvulkan\tx\ty\tmatmul\ts\tf32\ta=1\t-1\t2\n")}) {
    write(path, junk);
    testing::internal::CaptureStderr();
    TuningCache c(path.string());
    c.put(entry(kGpu, "m2_k2_n2"));
    c.save();  // a second look at the corrupt file while saving: still one warning
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count(err, "warning"), 1u) << err;
    EXPECT_NE(err.find(path.string()), std::string::npos) << err;
    testing::internal::CaptureStderr();
    TuningCache again(path.string());
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(again.size(), 1u);
  }
  // The bad line is named.
  write(path, "# spire tuning cache 1\n# a comment\nvulkan\tx\n");
  testing::internal::CaptureStderr();
  TuningCache c(path.string());
  EXPECT_NE(testing::internal::GetCapturedStderr().find("line 3"), std::string::npos);
}

TEST(TuningCache, UnreadablePathWarnsAndSaveFailsClearly) {
  auto path = tuning_test::scratch_dir() / "tuning.txt";
  std::filesystem::create_directories(path);  // a folder where the file should be
  testing::internal::CaptureStderr();
  TuningCache c(path.string());
  c.put(entry(kGpu, "m2_k2_n2"));
  EXPECT_THROW(c.save(), std::runtime_error);
  EXPECT_EQ(count(testing::internal::GetCapturedStderr(), "warning"), 1u);
}

TEST(TuningCache, AnotherDeviceBackendOrDriverNeverMatches) {
  auto path = tuning_test::scratch_dir() / "tuning.txt";
  TuningCache c(path.string());
  c.put(entry(kGpu, "m64_k784_n120"));
  const lowering::TuningKey key{"matmul", "m64_k784_n120", "f32"};
  EXPECT_NE(c.find(DeviceKey::of(kGpu), key), nullptr);
  for (const rt::DeviceInfo& other : {device_info("NVIDIA H100 80GB HBM3", "NVIDIA 560.1"),
                                      device_info("NVIDIA H200", "NVIDIA 550.54.15"),
                                      device_info("NVIDIA H100 80GB HBM3", "NVIDIA 550.54.15", rt::Backend::Cuda)}) {
    EXPECT_EQ(c.find(DeviceKey::of(other), key), nullptr) << other.name << " " << other.driver;
    EXPECT_TRUE(c.choices_for(other).configs.empty());
  }
  // Fields keep their tabs out of the file.
  EXPECT_EQ(DeviceKey::of(device_info("a\tb\nc", "d")).name, "a b c");
}

TEST(TuningCache, TwoThreadsWritingAtOnceLoseNothing) {
  auto path = (tuning_test::scratch_dir() / "tuning.txt").string();
  constexpr int kEach = 25;
  auto writer = [&](int id) {
    TuningCache c(path);
    for (int i = 0; i < kEach; ++i) {
      c.put(entry(kGpu, fmt::format("m{}_k{}_n1", id, i)));
      c.save();
    }
  };
  std::thread a(writer, 1), b(writer, 2);
  a.join();
  b.join();
  TuningCache c(path);
  EXPECT_EQ(c.size(), size_t(2 * kEach));
}

TEST(TuningCache, TwoProcessesWritingAtOnceLoseNothing) {
  auto path = (tuning_test::scratch_dir() / "tuning.txt").string();
  constexpr int kEach = 20;
  std::vector<pid_t> children;
  for (int id = 1; id <= 2; ++id) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        TuningCache c(path);
        for (int i = 0; i < kEach; ++i) {
          c.put(entry(kGpu, fmt::format("m{}_k{}_n2", id, i)));
          c.save();
        }
      } catch (...) {
        rc = 1;
      }
      _exit(rc);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  TuningCache c(path);
  EXPECT_EQ(c.size(), size_t(2 * kEach));
  // No temporary file is left behind.
  for (const auto& f : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    EXPECT_EQ(f.path().filename().string().find(".tmp."), std::string::npos) << f.path();
}

TEST(TuningCache, DefaultPathFollowsTheEnvironment) {
  auto saved = [](const char* n) { const char* v = std::getenv(n); return v ? std::optional<std::string>(v) : std::nullopt; };
  const auto spire_dir = saved("SPIRE_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");
  setenv("SPIRE_CACHE_DIR", "/a", 1);
  setenv("XDG_CACHE_HOME", "/b", 1);
  setenv("HOME", "/c", 1);
  EXPECT_EQ(TuningCache::default_path(), "/a/tuning.txt");
  unsetenv("SPIRE_CACHE_DIR");
  EXPECT_EQ(TuningCache::default_path(), "/b/spire/tuning.txt");
  setenv("XDG_CACHE_HOME", "", 1);
  EXPECT_EQ(TuningCache::default_path(), "/c/.cache/spire/tuning.txt");
  auto restore = [](const char* n, const std::optional<std::string>& v) {
    if (v) setenv(n, v->c_str(), 1);
    else unsetenv(n);
  };
  restore("SPIRE_CACHE_DIR", spire_dir);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

}  // namespace
