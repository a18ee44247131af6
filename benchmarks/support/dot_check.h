// How a benchmark checks one result element of a matmul or a convolution (a dot product) against float64 on
// the host. The error is relative to the sum of the products' magnitudes, not to the result: random signed
// inputs make some results cancel to nearly zero, where a plain relative error says nothing about the
// kernel. fp32 rounding bounds this measure by about (terms x 2^-24): 5e-4 for 8192 terms at worst,
// typically 1e-6, so a 1e-3 limit only trips on a wrong result.
#pragma once

#include <cmath>
#include <limits>

namespace spire::bench {

constexpr double kMaxRelativeError = 1e-3;

struct DotReference {
  double value = 0;      // the exact-ish (float64) result
  double magnitude = 0;  // sum of |a * b| over the terms

  void add(double a, double b) {
    value += a * b;
    magnitude += std::fabs(a * b);
  }
  // Infinity for a NaN or infinite result (an element left unwritten keeps the executor's NaN poison).
  double error(float got) const {
    if (!std::isfinite(got)) return std::numeric_limits<double>::infinity();
    return std::fabs(double(got) - value) / std::max(magnitude, 1e-30);
  }
};

}  // namespace spire::bench
