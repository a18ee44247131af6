// The suite's instances in spire_runtime_conformance_mock_tests: cuda:0 of the mock CUDA driver
// (tests/runtime/cuda/mock_driver), which this executable finds through its RUNPATH; Vulkan devices are left to the
// other executable. The mock interprets the PTX it is given, so kernels compute real results and every
// conformance test applies to it.
#include <dlfcn.h>

#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_driver.h"
#include "tests/runtime/conformance/conformance.h"

namespace spire::rt::conformance {

namespace {

bool mock_driver_loaded() {
  (void)cuda::driver();  // loads libcuda.so.1, whichever the loader finds first
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h && ::dlsym(h, "mock_cuda_launch_count");
}

}  // namespace

std::vector<std::string> device_ids() {
  std::vector<std::string> ids;
  if (!mock_driver_loaded()) return ids;
  for (const auto& d : cuda::list_devices()) ids.push_back(d.id);
  return ids;
}

// A real libcuda.so.1 earlier on the search path (LD_LIBRARY_PATH wins over RUNPATH) would silently turn this
// run into a second run on the real GPU: fail instead.
TEST(RuntimeConformanceOnMockDriver, TheMockDriverIsTheOneLoaded) {
  EXPECT_TRUE(mock_driver_loaded()) << "libcuda.so.1 is not tests/runtime/cuda/mock_driver's; driver: " << cuda::driver_status();
  EXPECT_EQ(device_ids(), std::vector<std::string>{"cuda:0"});
}

}  // namespace spire::rt::conformance
