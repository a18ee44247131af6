// A shape seen as rows along one axis, the dims before it and after it merged: [outer, axis, inner]. Element
// (o, k, i) sits at (o * axis + k) * inner + i of the row-major data. The row-wise kernels (normalizations along an
// axis, argmax), their float64 references, gathers and concatenations all walk a tensor so.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace spire {

struct AxisRows {
  int64_t outer = 1, axis = 1, inner = 1;
};

// Throws std::invalid_argument naming `op` and the shape where `axis` is not one of the shape's (0 .. rank-1).
inline AxisRows axis_rows(const std::vector<int64_t>& shape, int64_t axis, std::string_view op) {
  if (axis < 0 || axis >= int64_t(shape.size())) {
    std::string dims;
    for (int64_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    throw std::invalid_argument(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for [" + dims + "]");
  }
  AxisRows s;
  for (int64_t d = 0; d < axis; ++d) s.outer *= shape[size_t(d)];
  s.axis = shape[size_t(axis)];
  for (size_t d = size_t(axis) + 1; d < shape.size(); ++d) s.inner *= shape[d];
  return s;
}

}  // namespace spire
