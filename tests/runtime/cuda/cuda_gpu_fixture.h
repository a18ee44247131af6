// Fixture for tests that need a CUDA device: skipped, visibly, where none exists.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/device.h"

namespace spire::rt::cuda::testing {

class CudaGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::list_devices().empty())
      GTEST_SKIP() << "no CUDA device (" << driver_status() << "): GPU test not run";
    dev = cuda::open(0);
  }

  template <class T>
  std::shared_ptr<Buffer> make(const std::vector<T>& host) {
    auto b = dev->alloc(host.size() * sizeof(T));
    dev->upload(*b, host.data(), host.size() * sizeof(T));
    return b;
  }
  // A buffer of n elements, every 32-bit word set to `poison` so unwritten outputs are visible.
  template <class T>
  std::shared_ptr<Buffer> poisoned(size_t n, uint32_t poison = 0xDEADBEEFu) {
    auto b = dev->alloc(n * sizeof(T));
    dev->fill(*b, poison);
    return b;
  }
  template <class T>
  std::vector<T> read(const Buffer& b, size_t n) {
    std::vector<T> out(n);
    dev->download(b, out.data(), n * sizeof(T));
    return out;
  }

  // The mock driver (tests/runtime/cuda/mock_driver) interprets kernels on the CPU: tests size heavy work down there.
  bool on_mock() const { return dev->info().name == "Mock GPU"; }

  std::unique_ptr<Device> dev;
};

}  // namespace spire::rt::cuda::testing
