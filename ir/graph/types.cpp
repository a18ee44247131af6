// DType, Shape and TensorType helpers, and op / compare-mode names.
#include <fmt/format.h>

#include "ir/graph/graph.h"
#include "ir/graph/op_table.h"

namespace spire::graph {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64, DType::F16, DType::BF16})
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F64 || is_half(t); }
bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }
bool is_int(DType t) { return t == DType::I32 || t == DType::I64; }

uint32_t dtype_bytes(DType t) {
  switch (t) {
    case DType::Bool: return 1;
    case DType::I32: case DType::F32: return 4;
    case DType::I64: case DType::F64: return 8;
    case DType::F16: case DType::BF16: return 2;
  }
  return 0;
}

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

std::string_view compare_mode_name(CompareMode m) {
  switch (m) {
    case CompareMode::Lt: return "lt";
    case CompareMode::Le: return "le";
    case CompareMode::Gt: return "gt";
    case CompareMode::Ge: return "ge";
    case CompareMode::Eq: return "eq";
    case CompareMode::Ne: return "ne";
  }
  return "?";
}

std::optional<CompareMode> compare_mode_from_name(std::string_view name) {
  for (CompareMode m : {CompareMode::Lt, CompareMode::Le, CompareMode::Gt, CompareMode::Ge, CompareMode::Eq,
                        CompareMode::Ne})
    if (compare_mode_name(m) == name) return m;
  return std::nullopt;
}

}  // namespace spire::graph
