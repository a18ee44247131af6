// The CUDA driver, loaded at run time: dlopen("libcuda.so.1"), then every entry point through
// cuGetProcAddress, so a spire binary starts (and lists no CUDA devices) on a machine without the driver.
#pragma once

#include <string>
#include <string_view>

#include "runtime/cuda/cuda_driver_api.h"

namespace spire::rt::cuda {

struct Driver {
  DriverApi api;
  int version = 0;       // cuDriverGetVersion: 12080 for CUDA 12.8
  bool ok = false;       // loaded and cuInit succeeded
  std::string problem;   // why not, when !ok
};

// Loads and initializes the driver on first use (thread-safe); never throws.
const Driver& driver();

// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", from the driver's own tables when it has them.
std::string result_text(const Driver& d, CUresult r);

// "CUDA driver 12.8" from 12080.
std::string driver_version_text(int version);

// Throws rt::Error (rt::OutOfMemory for CUDA_ERROR_OUT_OF_MEMORY) naming the device, the call and the
// driver's error, when r is not CUDA_SUCCESS. `context` adds what the call was doing (may be empty).
[[noreturn]] void throw_result(const Driver& d, CUresult r, std::string_view device, std::string_view call,
                               std::string_view context = {});
inline void check(const Driver& d, CUresult r, std::string_view device, std::string_view call,
                  std::string_view context = {}) {
  if (r != CUDA_SUCCESS) throw_result(d, r, device, call, context);
}

}  // namespace spire::rt::cuda

namespace spire::rt::cuda {

// One line for `spire devices` and test output: "CUDA driver 13.0, 1 device", or why there is no driver.
std::string driver_status();

}  // namespace spire::rt::cuda
