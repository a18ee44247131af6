// The VkPipelineCache of one device, kept on disk between runs so that a warm start skips the driver's shader
// compilation: loaded from <cache folder>/vulkan-pipelines-<vendor>-<device>-<driver version>-<cache UUID>.bin
// when the device opens, used for every pipeline it creates, and written back when it closes.
//
// The file name holds everything a driver build's cache data depends on, so a driver update simply starts a new
// file. The data sits in spire's envelope (runtime/cache_record.h), and the Vulkan header inside it must name
// this device and driver too, before a byte reaches the driver: a damaged or foreign file is ignored with one
// warning and replaced at the next save. SPIRE_NO_DISK_CACHE=1, or no cache folder at all, turns it off: then
// pipelines are created without a cache, as before.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "runtime/vulkan/vulkan_api.h"
#include "runtime/vulkan/vulkan_device_info.h"
#include "runtime/vulkan/vulkan_functions.h"

namespace spire::rt::vulkan {

// What happened to a device's pipeline cache, for tests and `--verbose` style reports.
struct PipelineCacheStats {
  bool enabled = false;           // a cache folder exists and SPIRE_NO_DISK_CACHE is not 1
  std::filesystem::path file;     // where the cache lives ("" when disabled)
  bool loaded = false;            // the file existed, passed every check and was handed to the driver
  uint64_t loaded_bytes = 0;      // the driver data it held
  uint32_t pipelines_created = 0; // by this device since it opened
  // Of them, those the driver reports it found in the cache (its creation feedback's APPLICATION_PIPELINE_CACHE_HIT
  // bit, where the device has pipeline creation feedback: Vulkan 1.3); hits_known false elsewhere.
  uint32_t cache_hits = 0;
  bool hits_known = false;
};

// The file that holds the pipeline cache of a device with these facts, inside `folder`.
std::filesystem::path pipeline_cache_file(const std::filesystem::path& folder, const PhysicalDeviceFacts& facts);

// Why a pipeline cache's driver data cannot belong to a device with these facts, or "" when it can: checks the
// VkPipelineCacheHeaderVersionOne at its start (size, version, vendor, device, pipelineCacheUUID).
std::string pipeline_cache_data_problem(std::string_view data, const PhysicalDeviceFacts& facts);

class PipelineCache {
 public:
  // Loads the device's file when there is one (one warning on stderr for a file that fails a check).
  PipelineCache(const PhysicalDeviceFacts& facts, VkDevice device, const DeviceFunctions& fn, std::string device_id);
  // Saves (see save()) and destroys the VkPipelineCache. Call while the VkDevice is alive.
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // For vkCreateComputePipelines; VK_NULL_HANDLE when disk caching is off.
  VkPipelineCache handle() const { return cache_; }
  // `hit`: the driver's creation feedback, when it gave one.
  void note_pipeline_created(std::optional<bool> hit = std::nullopt) {
    pipelines_created_.fetch_add(1, std::memory_order_relaxed);
    if (hit) hits_known_.store(true, std::memory_order_relaxed);
    if (hit.value_or(false)) cache_hits_.fetch_add(1, std::memory_order_relaxed);
  }
  PipelineCacheStats stats() const;

 private:
  // Writes the cache back when this device created pipelines and the data differs from what was loaded, merged
  // first with what the file holds now (another process may have saved since this one loaded). Never throws:
  // a cache that cannot be written costs the next start time, not this run, so it is a warning.
  void save();
  std::string data_of(VkPipelineCache cache) const;

  const PhysicalDeviceFacts& facts_;
  VkDevice device_;
  const DeviceFunctions& fn_;
  std::string device_id_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  PipelineCacheStats stats_;
  uint64_t loaded_checksum_ = 0;  // of the data loaded, to tell whether anything new was added
  std::atomic<uint32_t> pipelines_created_{0}, cache_hits_{0};
  std::atomic<bool> hits_known_{false};
};

}  // namespace spire::rt::vulkan
