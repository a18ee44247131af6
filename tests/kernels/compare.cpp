#include "tests/kernels/compare.h"

#include <cmath>
#include <random>

#include <fmt/format.h>

namespace spire::heavy_test {

graph::Tensor random_tensor(graph::DType dtype, const graph::Shape& shape, uint32_t seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  graph::Tensor t(dtype, shape);
  for (auto& v : t.data) v = dist(rng);
  return t.round_to_dtype();
}

graph::Tensor random_ints(graph::DType dtype, const graph::Shape& shape, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  graph::Tensor t(dtype, shape);
  for (auto& v : t.data) v = double(dist(rng));
  return t;
}

graph::Tensor abs_of(const graph::Tensor& t) {
  graph::Tensor a = t;
  for (auto& v : a.data) v = std::fabs(v);
  return a;
}

std::map<std::string, graph::Tensor> abs_of(const std::map<std::string, graph::Tensor>& ts) {
  std::map<std::string, graph::Tensor> out;
  for (const auto& [name, t] : ts) out[name] = graph::is_float(t.dtype) ? abs_of(t) : t;
  return out;
}

std::string compare(const graph::Tensor& got, const graph::Tensor& ref, Tolerance tol, const graph::Tensor* scale) {
  if (got.shape != ref.shape)
    return fmt::format("shape {} differs from the reference's {}", graph::shape_to_string(got.shape),
                       graph::shape_to_string(ref.shape));
  int64_t bad = 0, worst = -1;
  double worst_ratio = 0;
  std::string first;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double g = got[i], r = ref[i];
    double s = scale ? std::fabs((*scale)[i]) : std::fabs(r);
    double allowed = tol.atol + tol.rtol * s;
    bool ok;
    double ratio;
    if (std::isnan(r) || std::isnan(g)) {
      ok = std::isnan(r) && std::isnan(g);
      ratio = ok ? 0 : INFINITY;
    } else {
      double err = std::fabs(g - r);
      ok = err <= allowed;
      ratio = allowed > 0 ? err / allowed : (err > 0 ? INFINITY : 0);
    }
    if (ratio > worst_ratio || worst < 0) worst_ratio = ratio, worst = i;
    if (!ok) {
      if (++bad <= 5) first += fmt::format("\n  [{}] got {:.9g}, expected {:.9g} (allowed error {:.3g})", i, g, r, allowed);
    }
  }
  if (bad == 0) return "";
  return fmt::format("{} of {} elements outside the tolerance (rtol {:g}, atol {:g}); worst [{}]: got {:.9g}, "
                     "expected {:.9g}{}",
                     bad, ref.numel(), tol.rtol, tol.atol, worst, got[worst], ref[worst], first);
}

}  // namespace spire::heavy_test
