// An enum's names written once and read both ways: the inverse of a name function (an enum's dtype_name,
// pass_point_name, ...), and a table of values and names for enums named by a table rather than a switch.
#pragma once

#include <cstddef>
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

// One entry of an enum's name table.
template <class E>
struct NamedValue {
  E value;
  std::string_view name;
};

// v's name in `table`, or "?" for a value the table lacks.
template <class E, std::size_t N>
constexpr std::string_view name_in(const NamedValue<E> (&table)[N], E v) {
  for (const NamedValue<E>& entry : table)
    if (entry.value == v) return entry.name;
  return "?";
}

// The value named `name` in `table`, or nothing.
template <class E, std::size_t N>
constexpr std::optional<E> value_named_in(const NamedValue<E> (&table)[N], std::string_view name) {
  for (const NamedValue<E>& entry : table)
    if (entry.name == name) return entry.value;
  return std::nullopt;
}

}  // namespace spire
