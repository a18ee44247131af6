// The checks shape rules share (shape_checks.h).
#include "ir/graph/shape_checks.h"

#include <fmt/format.h>

#include "base/sliding_window.h"

namespace spire::graph::shape_checks {

void require_float(const ShapeContext& c, size_t i) {
  if (!is_float(c.inputs[i].dtype)) c.fail(fmt::format("{} must be a float tensor (f32 or f64)", c.describe_input(i)));
}

void require_numeric(const ShapeContext& c, size_t i) {
  if (c.inputs[i].dtype == DType::Bool) c.fail(fmt::format("{} must be numeric, not bool", c.describe_input(i)));
}

void require_same_dtype(const ShapeContext& c, size_t i, size_t j) {
  if (c.inputs[i].dtype != c.inputs[j].dtype)
    c.fail(fmt::format("{} and {} have different dtypes (no implicit promotion; use cast)", c.describe_input(i),
                       c.describe_input(j)));
}

void require_axis(const ShapeContext& c, size_t i, int64_t axis) {
  if (axis < 0 || axis >= c.inputs[i].rank())
    c.fail(fmt::format("axis {} is out of range for {}", axis, c.describe_input(i)));
}

void require_rank(const ShapeContext& c, size_t i, int64_t rank, const char* layout) {
  if (c.inputs[i].rank() != rank)
    c.fail(fmt::format("{} must have rank {} ({})", c.describe_input(i), rank, layout));
}

const std::vector<int64_t>& ints_attr(const ShapeContext& c, const char* name, size_t n, int64_t min) {
  const auto& v = c.attrs.get_ints(name);
  if (v.size() != n) c.fail(fmt::format("attribute {} must have {} entries, got {}", name, n, shape_to_string(v)));
  for (int64_t x : v)
    if (x < min) c.fail(fmt::format("attribute {} must be >= {} in every entry, got {}", name, min, shape_to_string(v)));
  return v;
}

Shape shape_attr(const ShapeContext& c, const char* name) {
  const auto& v = c.attrs.get_ints(name);
  for (int64_t d : v)
    if (d < 0) c.fail(fmt::format("attribute {} has a negative dimension: {}", name, shape_to_string(v)));
  return v;
}

int64_t window_out(const ShapeContext& c, const char* what, int64_t in, int64_t k_eff, int64_t stride, int64_t pad) {
  const int64_t positions = sliding_window_positions(in, k_eff, stride, pad);
  if (positions < 0)
    c.fail(fmt::format("{}: window of extent {} does not fit input size {} with padding {}", what, k_eff, in, pad));
  return positions;
}

void require_shape(const ShapeContext& c, size_t i, const Shape& expected, const char* why) {
  if (c.inputs[i].shape != expected)
    c.fail(fmt::format("{} must have shape {} ({})", c.describe_input(i), shape_to_string(expected), why));
}

void require_int(const ShapeContext& c, size_t i, const char* what) {
  if (!is_int(c.inputs[i].dtype)) c.fail(fmt::format("{} ({}) must be i32 or i64", c.describe_input(i), what));
}

}  // namespace spire::graph::shape_checks
