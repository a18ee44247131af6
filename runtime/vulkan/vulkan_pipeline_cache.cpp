#include "runtime/vulkan/vulkan_pipeline_cache.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "runtime/cache_dir.h"
#include "runtime/cache_record.h"

namespace spire::rt::vulkan {

namespace {

constexpr const char* kWhat = "pipeline cache";

std::string hex(const uint8_t* bytes, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", bytes[i]);
  return s;
}

uint32_t u32_at(std::string_view data, size_t at) {
  uint32_t v;
  std::memcpy(&v, data.data() + at, 4);  // the Vulkan header is in the host's byte order
  return v;
}

}  // namespace

std::filesystem::path pipeline_cache_file(const std::filesystem::path& folder, const PhysicalDeviceFacts& facts) {
  return folder / fmt::format("vulkan-pipelines-{:04x}-{:04x}-{:08x}-{}.bin", facts.vendor_id, facts.device_id,
                              facts.driver_version, hex(facts.pipeline_cache_uuid, VK_UUID_SIZE));
}

std::string pipeline_cache_data_problem(std::string_view data, const PhysicalDeviceFacts& facts) {
  constexpr size_t kHeaderOne = 16 + VK_UUID_SIZE;
  if (data.size() < kHeaderOne)
    return fmt::format("its {} bytes of data are too few for a Vulkan pipeline cache header", data.size());
  const uint32_t header_size = u32_at(data, 0), header_version = u32_at(data, 4);
  if (header_size < kHeaderOne || header_size > data.size() || header_version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
    return fmt::format("its Vulkan header is malformed (size {}, version {})", header_size, header_version);
  const uint32_t vendor = u32_at(data, 8), device = u32_at(data, 12);
  const auto* uuid = reinterpret_cast<const uint8_t*>(data.data() + 16);
  if (vendor != facts.vendor_id || device != facts.device_id ||
      std::memcmp(uuid, facts.pipeline_cache_uuid, VK_UUID_SIZE) != 0)
    return fmt::format("it was written for another device or driver (vendor 0x{:04x}, device 0x{:04x}, cache UUID {})",
                       vendor, device, hex(uuid, VK_UUID_SIZE));
  return {};
}

PipelineCache::PipelineCache(const PhysicalDeviceFacts& facts, VkDevice device, const DeviceFunctions& fn,
                             std::string device_id)
    : facts_(facts), device_(device), fn_(fn), device_id_(std::move(device_id)) {
  const std::filesystem::path folder = cache_dir();
  stats_.enabled = !folder.empty() && !disk_cache_disabled();
  if (!stats_.enabled) return;
  stats_.file = pipeline_cache_file(folder, facts_);

  std::string initial;
  if (std::optional<std::string> data = load_cache_record(stats_.file, CacheKind::VulkanPipelineCache, kWhat)) {
    std::string problem = pipeline_cache_data_problem(*data, facts_);
    if (problem.empty())
      initial = std::move(*data);
    else
      warn_ignored_cache_file(stderr, kWhat, stats_.file, problem);
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = initial.size();
  ci.pInitialData = initial.empty() ? nullptr : initial.data();
  VkResult r = fn_.vkCreatePipelineCache(device_, &ci, nullptr, &cache_);
  if (r != VK_SUCCESS && !initial.empty()) {
    // The driver refused data that passed spire's checks: start empty rather than fail the device.
    warn_ignored_cache_file(stderr, kWhat, stats_.file, fmt::format("the driver refused it ({})", result_name(r)));
    initial.clear();
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    r = fn_.vkCreatePipelineCache(device_, &ci, nullptr, &cache_);
  }
  check(r, "vkCreatePipelineCache", device_id_);
  stats_.loaded = !initial.empty();
  stats_.loaded_bytes = initial.size();
  loaded_checksum_ = fnv1a64(initial);
}

PipelineCache::~PipelineCache() {
  if (!cache_) return;
  save();
  fn_.vkDestroyPipelineCache(device_, cache_, nullptr);
}

PipelineCacheStats PipelineCache::stats() const {
  PipelineCacheStats s = stats_;
  s.pipelines_created = pipelines_created_.load(std::memory_order_relaxed);
  s.cache_hits = cache_hits_.load(std::memory_order_relaxed);
  s.hits_known = hits_known_.load(std::memory_order_relaxed);
  return s;
}

std::string PipelineCache::data_of(VkPipelineCache cache) const {
  size_t size = 0;
  check(fn_.vkGetPipelineCacheData(device_, cache, &size, nullptr), "vkGetPipelineCacheData", device_id_);
  std::string data(size, '\0');
  VkResult r = fn_.vkGetPipelineCacheData(device_, cache, &size, data.data());
  check(r, "vkGetPipelineCacheData", device_id_);
  if (r == VK_INCOMPLETE) throw Error(fmt::format("{}: the pipeline cache grew while it was read", device_id_));
  data.resize(size);
  return data;
}

void PipelineCache::save() {
  if (pipelines_created_.load() == 0) return;  // nothing this run could have added
  try {
    std::string data = data_of(cache_);
    if (data.size() == stats_.loaded_bytes && fnv1a64(data) == loaded_checksum_) return;  // every pipeline was a hit
    // Merge what another process saved since this one loaded, so concurrent runs do not drop each other's
    // pipelines more than they must. Silently skipped when the file is unusable: it is being replaced anyway.
    if (std::optional<std::string> disk = load_cache_record(stats_.file, CacheKind::VulkanPipelineCache, kWhat, nullptr);
        disk && fnv1a64(*disk) != loaded_checksum_ && pipeline_cache_data_problem(*disk, facts_).empty()) {
      VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
      ci.initialDataSize = disk->size();
      ci.pInitialData = disk->data();
      VkPipelineCache theirs = VK_NULL_HANDLE;
      if (fn_.vkCreatePipelineCache(device_, &ci, nullptr, &theirs) == VK_SUCCESS) {
        VkResult merged = fn_.vkMergePipelineCaches(device_, cache_, 1, &theirs);
        fn_.vkDestroyPipelineCache(device_, theirs, nullptr);
        if (merged == VK_SUCCESS) data = data_of(cache_);
      }
    }
    store_cache_record(stats_.file, CacheKind::VulkanPipelineCache, data);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spire: warning: the pipeline cache of %s was not saved: %s\n", device_id_.c_str(), e.what());
  }
}

}  // namespace spire::rt::vulkan
