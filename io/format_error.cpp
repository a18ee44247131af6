#include "io/format_error.h"

#include <fmt/format.h>

namespace spire::io {

void throw_format_error(std::string_view file, std::string_view problem) {
  throw FormatError(fmt::format("{}: {}", file, problem));
}

std::string display_name(const std::filesystem::path& path) { return path.string(); }

}  // namespace spire::io
