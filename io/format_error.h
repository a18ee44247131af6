// The one error type of spire::io: a file that cannot be read, or whose contents break its format.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spire::io {

// what() names the file first ("x.safetensors: tensor 'w': ...") so a user knows where to look.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "<file>: <problem>"
[[noreturn]] void throw_format_error(std::string_view file, std::string_view problem);

// The display name of a path in messages: the path as given by the user.
std::string display_name(const std::filesystem::path& path);

}  // namespace spire::io
