// Whole-file reads and atomic writes for spire's cache files (runtime/cache_dir.h says where they live).
//
// Several processes may share one cache folder (two training runs, a test suite run with -j). A writer never
// updates a file in place: it writes a temporary file of a unique name in the same folder, flushes it to disk,
// and renames it over the old one. Readers therefore see either the old file or a complete new one, never a
// torn mix; when two processes write at once, the last complete rename wins.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace spire::rt {

// The whole file, or nullopt when it does not exist. Throws rt::Error naming the file when it exists but cannot
// be read.
std::optional<std::string> read_whole_file(const std::filesystem::path& path);

// Replaces `path` with `bytes` atomically (temporary file in the same folder, fsync, rename), creating the
// folder if needed. Throws rt::Error naming the file and the reason; the temporary file is removed then.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace spire::rt
