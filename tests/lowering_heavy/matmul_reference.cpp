#include "tests/lowering_heavy/matmul_reference.h"

#include <cmath>

namespace spire::heavy_test {

ReferenceProduct reference_product(const graph::Tensor& a, const graph::Tensor& b, int64_t batch, int64_t m, int64_t k,
                                   int64_t n, bool a_transposed, bool b_transposed, bool b_shared) {
  ReferenceProduct r{graph::Tensor(graph::DType::F64, {batch, m, n}), graph::Tensor(graph::DType::F64, {batch, m, n})};
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, mag = 0;
        for (int64_t q = 0; q < k; ++q) {
          const double x = a_transposed ? a[q * m + i] : a[(p * m + i) * k + q];
          const double y = b_transposed ? b[j * k + q] : b[((b_shared ? 0 : p) * k + q) * n + j];
          sum += x * y;
          mag += std::abs(x * y);
        }
        r.product[(p * m + i) * n + j] = sum;
        r.magnitude[(p * m + i) * n + j] = mag;
      }
  return r;
}

}  // namespace spire::heavy_test
