// The inverse of a name function (an enum's dtype_name, pass_point_name, ...): the value whose name is given, so that
// each enum writes its names once, in its name function, and parses them through it.
#pragma once

#include <iterator>
#include <optional>
#include <string_view>
#include <type_traits>

namespace spire {

// The element of `values` whose `name_of` is `name`, or nothing.
template <class Values, class NameOf>
auto value_named(const Values& values, NameOf name_of, std::string_view name)
    -> std::optional<std::decay_t<decltype(*std::begin(values))>> {
  for (const auto& v : values)
    if (name_of(v) == name) return v;
  return std::nullopt;
}

}  // namespace spire
