#include "runtime/cuda/cuda_module_cache.h"

#include <cstdio>

#include <fmt/format.h>

#include "runtime/cache_dir.h"
#include "runtime/cache_record.h"

namespace spire::rt::cuda {

namespace {

constexpr const char* kWhat = "cached CUDA module";

}  // namespace

std::string module_cache_key(std::string_view ptx, int driver_version, uint32_t compute_capability) {
  uint64_t h = fnv1a64(ptx);
  h = fnv1a64(fmt::format("|driver {}|sm_{}", driver_version, compute_capability), h);
  return fmt::format("{:016x}", h);
}

std::filesystem::path module_cache_file(const std::filesystem::path& folder, std::string_view key) {
  return folder / "cuda-modules" / fmt::format("{}.cubin", key);
}

ModuleDiskCache::ModuleDiskCache(const Context& ctx) : ctx_(ctx) {
  folder_ = cache_dir();
  enabled_ = !folder_.empty() && !disk_cache_disabled() && ctx_.api().has_linker();
}

ModuleCacheStats ModuleDiskCache::stats() const {
  return ModuleCacheStats{enabled_, disk_hits_.load(), linked_.load(), stored_.load()};
}

CUmodule ModuleDiskCache::load(const std::string& ptx) {
  if (!enabled_) return nullptr;
  const std::filesystem::path file =
      module_cache_file(folder_, module_cache_key(ptx, ctx_.driver().version, ctx_.info().compute_capability));
  if (std::optional<std::string> cubin = load_cache_record(file, CacheKind::CudaCubin, kWhat)) {
    CUmodule m = nullptr;
    CUresult r = ctx_.api().cuModuleLoadDataEx(&m, cubin->data(), 0, nullptr, nullptr);
    if (r == CUDA_SUCCESS) {
      disk_hits_.fetch_add(1);
      return m;
    }
    warn_ignored_cache_file(stderr, kWhat, file, fmt::format("the driver refused it: {}", result_text(ctx_.driver(), r)));
  }
  return link_and_store(ptx, file);
}

CUmodule ModuleDiskCache::link_and_store(const std::string& ptx, const std::filesystem::path& file) {
  const DriverApi& a = ctx_.api();
  CUlinkState state = nullptr;
  if (a.cuLinkCreate(0, nullptr, nullptr, &state) != CUDA_SUCCESS) return nullptr;
  struct Destroy {
    const DriverApi& a;
    CUlinkState s;
    ~Destroy() { a.cuLinkDestroy(s); }  // also frees the cubin cuLinkComplete returned
  } destroy{a, state};
  // The size includes the terminating NUL, as cuLinkAddData expects for PTX text.
  if (a.cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(ptx.c_str()), ptx.size() + 1, "spire.ptx", 0, nullptr,
                      nullptr) != CUDA_SUCCESS)
    return nullptr;
  void* cubin = nullptr;
  size_t size = 0;
  if (a.cuLinkComplete(state, &cubin, &size) != CUDA_SUCCESS || !cubin || size == 0) return nullptr;
  CUmodule m = nullptr;
  if (a.cuModuleLoadDataEx(&m, cubin, 0, nullptr, nullptr) != CUDA_SUCCESS) return nullptr;
  linked_.fetch_add(1);
  try {
    store_cache_record(file, CacheKind::CudaCubin, std::string_view(static_cast<const char*>(cubin), size));
    stored_.fetch_add(1);
  } catch (const std::exception& e) {
    // Once per device: a read-only cache folder would otherwise repeat this for every module.
    if (!warned_store_.exchange(true))
      std::fprintf(stderr, "spire: warning: %s: CUDA modules are not cached on disk: %s\n", ctx_.id().c_str(), e.what());
  }
  return m;
}

}  // namespace spire::rt::cuda
