#include "kernels/tuning_config.h"

#include <charconv>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

namespace {

bool valid_name(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

}  // namespace

Config::Config(std::initializer_list<std::pair<std::string, int64_t>> values) {
  for (const auto& [name, value] : values) set(name, value);
}

int64_t Config::get(std::string_view name) const {
  for (const auto& [n, v] : values_)
    if (n == name) return v;
  throw std::invalid_argument(fmt::format("config '{}' has no value '{}'", text(), name));
}

bool Config::has(std::string_view name) const {
  for (const auto& [n, v] : values_)
    if (n == name) return true;
  return false;
}

Config& Config::set(std::string_view name, int64_t value) {
  if (!valid_name(name)) throw std::invalid_argument(fmt::format("config value name '{}' is not [a-z0-9_]+", name));
  for (auto& [n, v] : values_)
    if (n == name) {
      v = value;
      return *this;
    }
  values_.emplace_back(std::string(name), value);
  return *this;
}

std::string Config::text() const {
  std::string s;
  for (const auto& [n, v] : values_) s += fmt::format("{}{}={}", s.empty() ? "" : ",", n, v);
  return s;
}

Config Config::parse(std::string_view text) {
  Config c;
  if (text.empty()) return c;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    std::string_view item = text.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw std::invalid_argument(fmt::format("config '{}': '{}' is not name=value", text, item));
    std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || value.empty())
      throw std::invalid_argument(fmt::format("config '{}': '{}' is not an integer", text, value));
    if (!valid_name(name)) throw std::invalid_argument(fmt::format("config '{}': '{}' is not a name", text, name));
    if (c.has(name)) throw std::invalid_argument(fmt::format("config '{}': '{}' appears twice", text, name));
    c.set(name, v);
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return c;
}

}  // namespace spire::lowering::heavy
