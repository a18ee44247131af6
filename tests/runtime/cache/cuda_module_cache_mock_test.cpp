// The CUDA module cache against the mock CUDA driver (tests/runtime/cuda/mock_driver), which has no linker entry points:
// the cache must stay off, write nothing, and kernels still load and run.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/runtime/cache/cuda_cache_run.h"
#include "tests/runtime/cache/temp_folder.h"

namespace spire::rt::cache_test {
namespace {

TEST(CudaModuleCacheOnTheMockDriver, StaysOffWithoutTheDriversLinker) {
  ASSERT_TRUE(mock_driver_loaded()) << "libcuda.so.1 is not tests/runtime/cuda/mock_driver's; driver: " << cuda::driver_status();
  TempFolder folder;
  ScopedEnv dir("SPIRE_CACHE_DIR", folder.path().string()), on("SPIRE_NO_DISK_CACHE", std::nullopt);
  LoadResult r = load_and_run();  // and the kernel still runs right
  EXPECT_FALSE(r.stats.enabled);
  EXPECT_EQ(r.stats.linked + r.stats.stored + r.stats.disk_hits, 0u);
  EXPECT_FALSE(std::filesystem::exists(folder.path() / "cuda-modules"));
}

}  // namespace
}  // namespace spire::rt::cache_test
