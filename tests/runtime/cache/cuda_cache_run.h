// What the CUDA module cache tests share: which driver is loaded, and one load-and-run of a small kernel on a fresh
// cuda:0 that checks its result and returns the module cache's stats.
#pragma once

#include <dlfcn.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/compile_kernel.h"
#include "ir/kernel/builder.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_device.h"

namespace spire::rt::cache_test {

inline bool mock_driver_loaded() {
  (void)cuda::list_devices();  // loads libcuda.so.1, whichever the loader finds first
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h && ::dlsym(h, "mock_cuda_launch_count");
}

// y[i] = x[i] + 3.
inline kir::Kernel add_three() {
  using namespace kir;
  KernelBuilder kb("add_three", 64);
  auto x = kb.buffer("x", Type::F32, Access::Read);
  auto y = kb.buffer("y", Type::F32, Access::Write);
  auto n = kb.scalar("n", Type::U32);
  auto i = kb.global_id();
  kb.if_(i < n, [&] { y[i] = Val(x[i]) + 3.0; });
  return kb.finish();
}

// Loads add_three on a fresh cuda:0, runs it and checks every element; returns the cache's stats and the load time.
struct LoadResult {
  cuda::ModuleCacheStats stats;
  double load_ms = 0;
};
inline LoadResult load_and_run() {
  auto dev = open_device("cuda:0");
  auto* cd = dynamic_cast<cuda::CudaDevice*>(dev.get());
  if (!cd) throw std::logic_error("cuda:0 is not a CudaDevice");
  const kir::Kernel k = add_three();
  KernelBinary binary = backends::compile_kernel(k, dev->info());
  auto start = std::chrono::steady_clock::now();
  auto kernel = dev->load(binary);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const uint32_t n = 1000;
  std::vector<float> x(n), y(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i);
  auto xb = dev->alloc(n * 4), yb = dev->alloc(n * 4);
  dev->upload(*xb, x.data(), n * 4);
  dev->fill(*yb, 0xDEADBEEFu);
  BufferView views[] = {BufferView(xb), BufferView(yb)};
  dev->dispatch_now(*kernel, views, ScalarArgs().u32(n), Grid::threads(n, 64));
  dev->download(*yb, y.data(), n * 4);
  for (uint32_t i = 0; i < n; ++i)
    if (y[i] != float(i) + 3.0f) throw std::runtime_error("wrong result at " + std::to_string(i));
  return {cd->module_cache_stats(), ms};
}

}  // namespace spire::rt::cache_test
