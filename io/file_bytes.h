// Whole-file reads and atomic writes, with errors that name the file (spire::io::FormatError).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace spire::io {

// The file's bytes. A missing file, a directory or a read error is a FormatError naming the path.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);

// Writes "<path>.tmp" then renames it over `path`, so a reader never sees half a file.
void write_file_bytes_atomically(const std::filesystem::path& path, std::span<const uint8_t> bytes);

}  // namespace spire::io
