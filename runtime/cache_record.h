// spire's own envelope around data a driver hands back for caching (VkPipelineCache data, CUDA cubins), and the
// load/store every disk cache of the runtime goes through.
//
// Driver data is opaque and drivers are not required to survive garbage: some crash on a corrupt pipeline
// cache. So nothing read from disk reaches a driver before spire has checked, in a 32-byte header, that the file
// is a spire cache file (magic), of a format this build reads (version), of the expected kind (a CUDA module is
// not a pipeline cache), complete (payload size) and intact (FNV-1a 64 of the payload). A file failing any
// check is ignored with one warning on stderr and is replaced by the next save; it never stops spire.
//
// Header, little-endian: "SPIRECAC" | u32 format version (1) | u32 kind | u64 payload bytes | u64 FNV-1a 64.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace spire::rt {

// What a cache file holds; stored in its header as four ASCII characters.
enum class CacheKind : uint32_t {
  VulkanPipelineCache = 0x43504b56,  // "VKPC"
  CudaCubin = 0x4e425543,            // "CUBN"
};

inline constexpr size_t kCacheHeaderBytes = 32;
inline constexpr uint32_t kCacheFormatVersion = 1;

// FNV-1a, 64 bits: cheap, and plenty to tell a damaged file from an intact one (it is not a defence against
// someone forging files in the user's own cache folder).
uint64_t fnv1a64(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ull);

// The payload in spire's envelope.
std::string wrap_cache_record(CacheKind kind, std::string_view payload);

// The payload of `file`, or why it cannot be used (a sentence such as "its checksum does not match its data").
struct UnwrappedRecord {
  std::string_view payload;  // points into the bytes given to unwrap_cache_record
  std::string problem;       // empty when the payload can be used
};
UnwrappedRecord unwrap_cache_record(CacheKind kind, std::string_view file);

// The payload stored at `path`, or nullopt: when there is no file (silently), or when it cannot be read or fails a
// check (then one line "spire: warning: ignoring the WHAT PATH: REASON" goes to `warn`, if not null).
std::optional<std::string> load_cache_record(const std::filesystem::path& path, CacheKind kind, std::string_view what,
                                             std::FILE* warn = stderr);

// Writes `payload` in its envelope to `path` atomically (runtime/cache_file.h). Throws rt::Error on failure.
void store_cache_record(const std::filesystem::path& path, CacheKind kind, std::string_view payload);

// Prints "spire: warning: ignoring the WHAT PATH: REASON" to `warn` (if not null): the one format of the warning,
// shared with checks the caller makes on the payload itself (e.g. a pipeline cache of another device).
void warn_ignored_cache_file(std::FILE* warn, std::string_view what, const std::filesystem::path& path,
                             std::string_view reason);

}  // namespace spire::rt
