// DType, Shape and TensorType helpers, and op / compare-mode names.
#include <array>

#include <fmt/format.h>

#include "base/named_values.h"
#include "ir/graph/graph.h"
#include "ir/graph/op_table.h"

namespace spire::graph {

int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_to_string(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

std::string TensorType::to_string() const { return std::string(dtype_name(dtype)) + shape_to_string(shape); }

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right: missing leading dims count as 1.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string_view op_name(OpKind op) { return op_info(op).name; }

std::optional<OpKind> op_from_name(std::string_view name) {
  for (const OpInfo& info : op_table())
    if (info.name == name) return info.kind;
  return std::nullopt;
}

bool is_leaf(OpKind op) {
  return op == OpKind::Input || op == OpKind::Parameter || op == OpKind::State || op == OpKind::Constant;
}

constexpr NamedValue<CompareMode> kCompareModeNames[] = {
    {CompareMode::Lt, "lt"}, {CompareMode::Le, "le"}, {CompareMode::Gt, "gt"},
    {CompareMode::Ge, "ge"}, {CompareMode::Eq, "eq"}, {CompareMode::Ne, "ne"},
};

std::string_view compare_mode_name(CompareMode m) { return name_in(kCompareModeNames, m); }

std::optional<CompareMode> compare_mode_from_name(std::string_view name) {
  return value_named_in(kCompareModeNames, name);
}

}  // namespace spire::graph
