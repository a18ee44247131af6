// The one formula for how many places a window takes as it slides along an axis (convolutions and poolings; the
// graph's shape rules, the kernels' shapes and the benchmarks all use it).
#pragma once

#include <cstdint>

namespace spire {

// Positions of a window covering `span` elements (dilation * (kernel - 1) + 1) that slides by `stride` over `extent`
// elements with `pad` added at each end; -1 when the window does not fit the padded axis.
constexpr int64_t sliding_window_positions(int64_t extent, int64_t span, int64_t stride, int64_t pad) {
  const int64_t room = extent + 2 * pad - span;
  return room < 0 ? -1 : room / stride + 1;
}

}  // namespace spire
