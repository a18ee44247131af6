// The CUDA module cache on disk (runtime/cuda/cuda_module_cache.h). The key and file name need no GPU. On a real
// GPU (spire_runtime_cache_tests on the GPU machine): the first device compiles and stores the cubin, a second
// loads it, and a damaged file gives one warning and is replaced. (The mock driver: cuda_module_cache_mock_test.cpp.)
#include <gtest/gtest.h>

#include <set>

#include "runtime/cache_file.h"
#include "runtime/cache_record.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_module_cache.h"
#include "tests/runtime/cache/cuda_cache_run.h"
#include "tests/runtime/cache/temp_folder.h"

namespace spire::rt::cache_test {
namespace {

TEST(CudaModuleCacheKey, ChangesWithThePtxTheDriverAndTheArchitecture) {
  const std::string ptx = ".version 7.8\n.target sm_90\n";
  const std::string key = cuda::module_cache_key(ptx, 12080, 90);
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos) << key;
  EXPECT_EQ(cuda::module_cache_key(ptx, 12080, 90), key) << "the same inputs give the same key";
  std::set<std::string> keys = {key, cuda::module_cache_key(ptx + " ", 12080, 90), cuda::module_cache_key(ptx, 12090, 90),
                                cuda::module_cache_key(ptx, 12080, 89)};
  EXPECT_EQ(keys.size(), 4u) << "every input must change the key";
  EXPECT_EQ(cuda::module_cache_file("/cache", key), std::filesystem::path("/cache/cuda-modules/" + key + ".cubin"));
}

TEST(CudaModuleCacheOnAGpu, ASecondDeviceLoadsTheCubinTheFirstStored) {
  if (mock_driver_loaded()) GTEST_SKIP() << "the mock driver has no linker (the test above covers it)";
  if (cuda::list_devices().empty()) GTEST_SKIP() << "no CUDA device: " << cuda::driver_status();
  TempFolder folder;
  ScopedEnv dir("SPIRE_CACHE_DIR", folder.path().string()), on("SPIRE_NO_DISK_CACHE", std::nullopt);
  LoadResult cold = load_and_run();
  if (!cold.stats.enabled) GTEST_SKIP() << "this CUDA driver has no linker entry points: the cache is off";
  EXPECT_EQ(cold.stats.linked, 1u);
  EXPECT_EQ(cold.stats.stored, 1u);
  EXPECT_EQ(cold.stats.disk_hits, 0u);
  auto files = folder.files_containing(".cubin");
  ASSERT_EQ(files.size(), 1u);
  const std::string stored = *read_whole_file(files[0]);
  EXPECT_EQ(unwrap_cache_record(CacheKind::CudaCubin, stored).problem, "");

  LoadResult warm = load_and_run();
  EXPECT_EQ(warm.stats.disk_hits, 1u);
  EXPECT_EQ(warm.stats.linked, 0u);
  std::printf("add_three module load: cold %.2f ms (JIT + store), warm %.2f ms (cubin from disk)\n", cold.load_ms,
              warm.load_ms);

  std::string damaged = stored;
  damaged[damaged.size() / 2] = char(damaged[damaged.size() / 2] ^ 0x10);
  write_file_atomically(files[0], damaged);
  ::testing::internal::CaptureStderr();
  LoadResult again = load_and_run();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(again.stats.linked, 1u) << "a damaged cubin must be compiled again";
  EXPECT_NE(err.find("spire: warning: ignoring the cached CUDA module " + files[0].string() + ": "), std::string::npos)
      << err;
  EXPECT_EQ(unwrap_cache_record(CacheKind::CudaCubin, *read_whole_file(files[0])).problem, "") << "not replaced";
}

}  // namespace
}  // namespace spire::rt::cache_test
