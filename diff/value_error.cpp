#include "diff/value_error.h"

#include <cmath>

#include "op_harness/op_harness.h"

namespace spire::diff {

double ulp(double x, graph::DType dtype) {
  int mantissa_bits = 0, min_exponent = 0;
  switch (dtype) {
    case graph::DType::F16: mantissa_bits = 10, min_exponent = -14; break;
    case graph::DType::BF16: mantissa_bits = 7, min_exponent = -126; break;
    case graph::DType::F32: mantissa_bits = 23, min_exponent = -126; break;
    case graph::DType::F64: mantissa_bits = 52, min_exponent = -1022; break;
    default: return 0;
  }
  const double a = std::fabs(x);
  const int exponent = (a > 0 && std::isfinite(a)) ? std::max(std::ilogb(a), min_exponent) : min_exponent;
  return std::ldexp(1.0, exponent - mantissa_bits);
}

ValueError measure(const graph::Tensor& got, const graph::Tensor& want) {
  ValueError e;
  double sum_abs = 0;
  int64_t compared = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double g = got.data[i], w = want.data[i];
    if (std::isnan(g)) ++e.nan;
    if (std::isinf(g)) ++e.inf;
    if (!std::isfinite(g) || !std::isfinite(w)) continue;  // counted above; norm_error judges them
    const double d = std::fabs(g - w);
    e.want_max = std::max(e.want_max, std::fabs(w));
    sum_abs += d;
    ++compared;
    if (w != 0) e.max_rel = std::max(e.max_rel, d / std::fabs(w));
    if (d > e.max_abs) {
      e.max_abs = d;
      e.worst_index = int64_t(i);
    }
  }
  e.mean_abs = compared > 0 ? sum_abs / double(compared) : 0;
  if (e.worst_index >= 0) {
    const double unit = ulp(want.data[size_t(e.worst_index)], want.dtype);
    e.ulp_at_worst = unit > 0 ? e.max_abs / unit : 0;
  }
  e.norm_error = harness::max_norm_error(got, want);
  return e;
}

}  // namespace spire::diff
