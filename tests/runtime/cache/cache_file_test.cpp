// runtime/cache_dir.h and runtime/cache_file.h: where the caches live, whole-file reads, atomic writes (also from
// several processes at once).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "runtime/cache_dir.h"
#include "runtime/cache_file.h"
#include "runtime/device.h"
#include "tests/runtime/cache/temp_folder.h"

namespace spire::rt::cache_test {
namespace {

TEST(CacheDir, FollowsSpireCacheDirThenXdgThenHome) {
  ScopedEnv a("SPIRE_CACHE_DIR", "/a"), b("XDG_CACHE_HOME", "/b"), c("HOME", "/c");
  EXPECT_EQ(cache_dir(), std::filesystem::path("/a"));
  {
    ScopedEnv unset("SPIRE_CACHE_DIR", std::nullopt);
    EXPECT_EQ(cache_dir(), std::filesystem::path("/b/spire"));
    ScopedEnv empty("XDG_CACHE_HOME", "");  // empty counts as unset
    EXPECT_EQ(cache_dir(), std::filesystem::path("/c/.cache/spire"));
    ScopedEnv no_home("HOME", std::nullopt);
    EXPECT_TRUE(cache_dir().empty());
  }
}

TEST(CacheDir, NoDiskCacheOnlyForExactlyOne) {
  {
    ScopedEnv on("SPIRE_NO_DISK_CACHE", "1");
    EXPECT_TRUE(disk_cache_disabled());
  }
  for (const char* other : {"0", "", "yes"}) {
    ScopedEnv off("SPIRE_NO_DISK_CACHE", other);
    EXPECT_FALSE(disk_cache_disabled()) << "'" << other << "'";
  }
  ScopedEnv unset("SPIRE_NO_DISK_CACHE", std::nullopt);
  EXPECT_FALSE(disk_cache_disabled());
}

TEST(CacheFile, AMissingFileReadsAsNothing) {
  TempFolder t;
  EXPECT_EQ(read_whole_file(t.path() / "absent"), std::nullopt);
}

TEST(CacheFile, WritesCreateTheFolderAndReplaceTheFileWhole) {
  TempFolder t;
  const auto file = t.path() / "deeper" / "still" / "data.bin";
  std::string first(100000, 'a');
  first[5] = '\0';  // binary data survives
  write_file_atomically(file, first);
  EXPECT_EQ(read_whole_file(file), first);
  write_file_atomically(file, "short");
  EXPECT_EQ(read_whole_file(file), std::string("short"));
  EXPECT_TRUE(t.files_containing(".tmp.").empty()) << "a temporary file was left behind";
}

TEST(CacheFile, AWriteThatCannotHappenIsAnErrorNamingTheFile) {
  TempFolder t;
  std::ofstream(t.path() / "plain") << "x";
  const auto file = t.path() / "plain" / "inside.bin";  // a folder that is a file
  try {
    write_file_atomically(file, "data");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

// Processes replacing one file at once, each with its own large content, while the parent reads it: every read
// sees one writer's whole content, never a mix or a prefix, and the last complete write wins.
TEST(CacheFile, ConcurrentWritersNeverLeaveATornFile) {
  TempFolder t;
  const auto file = t.path() / "shared.bin";
  constexpr int kWriters = 4, kWrites = 30;
  constexpr size_t kBytes = 1 << 20;
  write_file_atomically(file, std::string(kBytes, 'A'));
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        const std::string mine(kBytes, char('a' + w));
        for (int i = 0; i < kWrites; ++i) write_file_atomically(file, mine);
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
    children.push_back(pid);
  }
  int torn = 0, reads = 0;
  for (int i = 0; i < 200; ++i) {
    std::optional<std::string> seen = read_whole_file(file);
    ++reads;
    if (!seen || seen->size() != kBytes || seen->find_first_not_of((*seen)[0]) != std::string::npos) ++torn;
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(torn, 0) << "of " << reads << " reads";
  std::optional<std::string> last = read_whole_file(file);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->size(), kBytes);
  EXPECT_GE((*last)[0], 'a');
  EXPECT_LT((*last)[0], char('a' + kWriters));
  EXPECT_EQ(last->find_first_not_of((*last)[0]), std::string::npos);
  EXPECT_TRUE(t.files_containing(".tmp.").empty());
}

}  // namespace
}  // namespace spire::rt::cache_test
