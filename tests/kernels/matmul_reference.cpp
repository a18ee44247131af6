#include "tests/kernels/matmul_reference.h"

#include <cmath>

#include "ir/graph/graph.h"
#include "tests/kernels/compare.h"
#include "tests/kernels/device_run.h"

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
          const int64_t b_batch = b_shared || b.numel() == k * n ? 0 : p;  // (one matrix: shared however called)
          const double y = b_transposed ? b[(b_batch * n + j) * k + q] : b[(b_batch * k + q) * n + j];
          sum += x * y;
          mag += std::abs(x * y);
        }
        r.product[(p * m + i) * n + j] = sum;
        r.magnitude[(p * m + i) * n + j] = mag;
      }
  return r;
}

std::string run_product(rt::Device& dev, lowering::heavy::HeavyKernel kernel, const graph::Tensor& a,
                        const graph::Tensor& b, int64_t batch, int64_t m, int64_t n, const ReferenceProduct& want,
                        double bound) {
  graph::Graph none;
  DeviceRun run(dev, none);
  auto type_of = [](const graph::Tensor& t) {
    return t.dtype == graph::DType::BF16 ? kir::Type::BF16 : t.dtype == graph::DType::F16 ? kir::Type::F16 : kir::Type::F32;
  };
  const int32_t a_slot = run.add_slot(type_of(a), a.numel(), "a"), b_slot = run.add_slot(type_of(b), b.numel(), "b");
  const int32_t c_slot = run.add_slot(kir::Type::F32, batch * m * n, "c");  // poisoned by run()
  run.upload(a_slot, a);
  run.upload(b_slot, b);
  run.launch(std::move(kernel.kernel), {a_slot, b_slot, c_slot}, {}, kernel.groups);
  run.run();
  const graph::Tensor got = run.download(c_slot, graph::DType::F32, {batch, m, n});
  const std::string problem = compare(got, want.product, {bound, 0}, &want.magnitude);
  return problem.empty() ? "" : run.kernels().at(0).name + ": " + problem;
}

std::string product_refusal(rt::Device& dev, lowering::heavy::HeavyKernel kernel) {
  graph::Graph none;
  DeviceRun run(dev, none);
  const int32_t a = run.add_slot(kir::Type::BF16, 64 * 64, "a"), b = run.add_slot(kir::Type::BF16, 64 * 64, "b");
  const int32_t c = run.add_slot(kir::Type::F32, 64 * 64, "c");
  run.launch(std::move(kernel.kernel), {a, b, c}, {}, kernel.groups);
  try {
    run.run();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace spire::heavy_test
