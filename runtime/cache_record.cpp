#include "runtime/cache_record.h"

#include <cstring>

#include <fmt/format.h>

#include "runtime/cache_file.h"
#include "runtime/device.h"

namespace spire::rt {

namespace {

constexpr char kMagic[8] = {'S', 'P', 'I', 'R', 'E', 'C', 'A', 'C'};

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char(uint8_t(v >> (8 * i))));
}

uint64_t get_le(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(in[at + i])) << (8 * i);
  return v;
}

std::string kind_name(uint32_t kind) {
  switch (CacheKind(kind)) {
    case CacheKind::VulkanPipelineCache: return "a Vulkan pipeline cache";
    case CacheKind::CudaCubin: return "a CUDA module";
  }
  return fmt::format("data of unknown kind 0x{:08x}", kind);
}

}  // namespace

uint64_t fnv1a64(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string wrap_cache_record(CacheKind kind, std::string_view payload) {
  std::string out(kMagic, sizeof(kMagic));
  put_le(out, kCacheFormatVersion, 4);
  put_le(out, uint32_t(kind), 4);
  put_le(out, payload.size(), 8);
  put_le(out, fnv1a64(payload), 8);
  out.append(payload);
  return out;
}

UnwrappedRecord unwrap_cache_record(CacheKind kind, std::string_view file) {
  auto bad = [](std::string why) { return UnwrappedRecord{{}, std::move(why)}; };
  if (file.size() < kCacheHeaderBytes) {
    if (file.size() >= sizeof(kMagic) && std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0)
      return bad("it is not a spire cache file");
    return bad(fmt::format("it is truncated: {} bytes, shorter than the {}-byte header", file.size(), kCacheHeaderBytes));
  }
  if (std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) return bad("it is not a spire cache file");
  const uint64_t version = get_le(file, 8, 4);
  if (version != kCacheFormatVersion)
    return bad(fmt::format("it has format version {}; this spire reads version {}", version, kCacheFormatVersion));
  const uint32_t stored_kind = uint32_t(get_le(file, 12, 4));
  if (stored_kind != uint32_t(kind))
    return bad(fmt::format("it holds {}, not {}", kind_name(stored_kind), kind_name(uint32_t(kind))));
  const uint64_t size = get_le(file, 16, 8);
  const uint64_t available = file.size() - kCacheHeaderBytes;
  if (size != available)
    return bad(fmt::format("its header promises {} bytes of data but it holds {} ({})", size, available,
                           size > available ? "truncated" : "trailing bytes"));
  std::string_view payload = file.substr(kCacheHeaderBytes);
  if (fnv1a64(payload) != get_le(file, 24, 8)) return bad("its checksum does not match its data (the file is corrupt)");
  return UnwrappedRecord{payload, {}};
}

void warn_ignored_cache_file(std::FILE* warn, std::string_view what, const std::filesystem::path& path,
                             std::string_view reason) {
  if (!warn) return;
  std::string line = fmt::format("spire: warning: ignoring the {} {}: {}\n", what, path.string(), reason);
  std::fputs(line.c_str(), warn);
  std::fflush(warn);
}

std::optional<std::string> load_cache_record(const std::filesystem::path& path, CacheKind kind, std::string_view what,
                                             std::FILE* warn) {
  std::optional<std::string> file;
  try {
    file = read_whole_file(path);
  } catch (const Error& e) {
    warn_ignored_cache_file(warn, what, path, e.what());
    return std::nullopt;
  }
  if (!file) return std::nullopt;
  UnwrappedRecord r = unwrap_cache_record(kind, *file);
  if (!r.problem.empty()) {
    warn_ignored_cache_file(warn, what, path, r.problem);
    return std::nullopt;
  }
  return std::string(r.payload);
}

void store_cache_record(const std::filesystem::path& path, CacheKind kind, std::string_view payload) {
  write_file_atomically(path, wrap_cache_record(kind, payload));
}

}  // namespace spire::rt
