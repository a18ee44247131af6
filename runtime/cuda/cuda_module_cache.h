// CUDA modules cached on disk as cubins, so a warm start skips the driver's PTX JIT (1.8 s for the 66 modules of
// LeNet's training step on an H100, 6 ms warm): <cache folder>/cuda-modules/<key>.cubin, where the key hashes the
// PTX text, the driver version and the device's compute capability, so that a driver update or another GPU simply
// misses.
//
// On a miss the PTX is compiled with the driver's own linker (cuLinkCreate / cuLinkAddData / cuLinkComplete),
// whose output is both loaded and stored; on a hit the cubin is loaded with cuModuleLoadDataEx. Files are in
// spire's envelope (runtime/cache_record.h): a damaged one is ignored with one warning, JIT-compiled again and
// replaced. The cache is off (modules are JIT-compiled from PTX as before) when SPIRE_NO_DISK_CACHE=1, when
// there is no cache folder, or when the driver lacks the linker entry points.
//
// It is not redundant with the driver's own JIT cache (~/.nv/ComputeCache): that one is often disabled or
// read-only in containers, is evicted at 256 MiB by default, and is keyed by the driver, not by spire.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "runtime/cuda/cuda_context.h"

namespace spire::rt::cuda {

// 16 hex digits: FNV-1a 64 of the PTX text, the driver version and the compute capability.
std::string module_cache_key(std::string_view ptx, int driver_version, uint32_t compute_capability);
// <folder>/cuda-modules/<key>.cubin
std::filesystem::path module_cache_file(const std::filesystem::path& folder, std::string_view key);

struct ModuleCacheStats {
  bool enabled = false;
  uint32_t disk_hits = 0;  // modules loaded from a cached cubin
  uint32_t linked = 0;     // modules compiled with the linker (and stored)
  uint32_t stored = 0;     // cubins written
};

class ModuleDiskCache {
 public:
  explicit ModuleDiskCache(const Context& ctx);
  bool enabled() const { return enabled_; }

  // The module of `ptx`, from a cached cubin or compiled with the linker and then cached; nullptr when neither
  // worked (the caller then JIT-compiles the PTX itself and reports the driver's error log). The context must be
  // current. Thread-safe.
  CUmodule load(const std::string& ptx);
  ModuleCacheStats stats() const;

 private:
  CUmodule link_and_store(const std::string& ptx, const std::filesystem::path& file);

  const Context& ctx_;
  bool enabled_ = false;
  std::filesystem::path folder_;
  std::atomic<uint32_t> disk_hits_{0}, linked_{0}, stored_{0};
  std::atomic<bool> warned_store_{false};
};

}  // namespace spire::rt::cuda
