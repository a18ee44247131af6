#include "io/file_bytes.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>

#include <fmt/format.h>

#include "io/format_error.h"

namespace spire::io {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

}  // namespace

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path) {
  const std::string name = display_name(path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw_format_error(name, "is a directory, not a file");
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) throw_format_error(name, fmt::format("cannot open: {}", std::strerror(errno)));
  std::vector<uint8_t> bytes;
  // Read in chunks rather than trusting a size reported up front (pipes, files that change), but into room for the
  // size reported: a model of hundreds of megabytes then takes no copies as the vector grows.
  constexpr size_t kChunk = 1 << 20;
  if (const auto size = std::filesystem::file_size(path, ec); !ec) bytes.reserve(size_t(size) + kChunk);
  for (;;) {
    const size_t old = bytes.size();
    bytes.resize(old + kChunk);
    const size_t got = std::fread(bytes.data() + old, 1, kChunk, f.get());
    bytes.resize(old + got);
    if (got < kChunk) break;
  }
  if (std::ferror(f.get())) throw_format_error(name, fmt::format("read error: {}", std::strerror(errno)));
  return bytes;
}

void write_file_bytes_atomically(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
  const std::string name = display_name(path);
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    File f(std::fopen(tmp.c_str(), "wb"));
    if (!f) throw_format_error(name, fmt::format("cannot create {}: {}", tmp.string(), std::strerror(errno)));
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size()) {
      const int err = errno;
      f.reset();
      std::remove(tmp.c_str());
      throw_format_error(name, fmt::format("write error: {}", std::strerror(err)));
    }
    if (std::fclose(f.release()) != 0) {
      const int err = errno;
      std::remove(tmp.c_str());
      throw_format_error(name, fmt::format("write error: {}", std::strerror(err)));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw_format_error(name, fmt::format("cannot rename {} to it: {}", tmp.string(), ec.message()));
  }
}

}  // namespace spire::io
