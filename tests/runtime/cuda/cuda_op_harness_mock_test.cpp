// The lowering's op harness (every graph op forward and backward against the float64 evaluator, under the
// per-op tolerances) run on cuda:0 through the mock driver, whose kernels the PTX interpreter executes: the
// PTX backend, the CUDA runtime and the lowering checked end to end without a GPU. ctest runs it with the
// mock on LD_LIBRARY_PATH; without the mock it skips and says so.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "op_harness/op_harness.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda/cuda_driver.h"

namespace spire::rt::cuda::testing {
namespace cuda_op_harness_mock_test {  // named, not anonymous: test executables build as unity batches

// A harness case's test name: its index and op, letters and digits only.
std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string name = std::to_string(info.param) + "_" + std::string(graph::op_name(harness::op_cases().at(info.param).op));
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

bool mock_loaded() {
  (void)driver();
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h && ::dlsym(h, "mock_cuda_launch_count");
}

class OpHarnessOnMock : public ::testing::TestWithParam<size_t> {};

TEST_P(OpHarnessOnMock, MatchesTheFloat64Evaluator) {
  if (!mock_loaded()) GTEST_SKIP() << "not running against the mock CUDA driver; driver: " << driver_status();
  static std::unique_ptr<Device> dev = cuda::open(0);
  const harness::OpCase& c = harness::op_cases().at(GetParam());
  for (const harness::OpRow& row : harness::run_op_case(c, *dev)) {
    EXPECT_EQ(row.outcome, harness::Outcome::Pass)
        << row.op << " " << row.label << " " << row.check << ": error " << row.max_error << " > " << row.tolerance
        << " " << row.note;
  }
}

INSTANTIATE_TEST_SUITE_P(AllCases, OpHarnessOnMock, ::testing::Range<size_t>(0, harness::op_cases().size()),
                         case_name);

// The matmul and conv2d cases again under the tf32 policy: products and convolutions of f32 values run on the tensor
// cores as TF32 where the lowering picks them (every matmul; convolutions with enough blocks, conv2d_mma_kernel.h), and
// each result and gradient is held to the TF32 bound of its dot product (op_harness.h's dot_product_error).
std::vector<size_t> dot_product_cases() {
  std::vector<size_t> out;
  for (size_t i = 0; i < harness::op_cases().size(); ++i) {
    const graph::OpKind op = harness::op_cases()[i].op;
    if (op == graph::OpKind::Matmul || op == graph::OpKind::Conv2d) out.push_back(i);
  }
  return out;
}

class OpHarnessTf32OnMock : public ::testing::TestWithParam<size_t> {};

TEST_P(OpHarnessTf32OnMock, IsWithinTheTf32BoundOfTheFloat64Evaluator) {
  if (!mock_loaded()) GTEST_SKIP() << "not running against the mock CUDA driver; driver: " << driver_status();
  static std::unique_ptr<Device> dev = cuda::open(0);
  const harness::OpCase& c = harness::op_cases().at(GetParam());
  for (const harness::OpRow& row : harness::run_op_case(c, *dev, 1, Precision::Tf32)) {
    EXPECT_EQ(row.outcome, harness::Outcome::Pass)
        << row.op << " " << row.label << " " << row.check << ": error " << row.max_error << " > " << row.tolerance
        << " " << row.note;
  }
}

INSTANTIATE_TEST_SUITE_P(DotProductCases, OpHarnessTf32OnMock, ::testing::ValuesIn(dot_product_cases()),
                         case_name);

// The f32 matmul and conv2d cases under bf16 and f16: operands and results stored in half, the products on the tensor
// cores (wmma on half fragments, f32 sums) where the lowering picks them, each result and gradient held to the policy's
// dot-product bound (base/precision.h).
struct HalfCase {
  size_t index;
  Precision precision;
};

std::vector<HalfCase> half_policy_cases() {
  std::vector<HalfCase> out;
  for (size_t i : dot_product_cases()) {
    bool f32 = true;
    for (const auto& in : harness::op_cases()[i].inputs) f32 &= in.type.dtype == graph::DType::F32;
    if (f32)
      for (Precision p : {Precision::Bf16, Precision::F16}) out.push_back({i, p});
  }
  return out;
}

class OpHarnessHalfPolicyOnMock : public ::testing::TestWithParam<HalfCase> {};

TEST_P(OpHarnessHalfPolicyOnMock, IsWithinTheHalfBoundOfTheFloat64Evaluator) {
  if (!mock_loaded()) GTEST_SKIP() << "not running against the mock CUDA driver; driver: " << driver_status();
  static std::unique_ptr<Device> dev = cuda::open(0);
  const harness::OpCase& c = harness::op_cases().at(GetParam().index);
  for (const harness::OpRow& row : harness::run_op_case(c, *dev, 1, GetParam().precision)) {
    EXPECT_EQ(row.outcome, harness::Outcome::Pass)
        << row.op << " " << row.label << " " << row.check << ": error " << row.max_error << " > " << row.tolerance
        << " " << row.note;
  }
}

INSTANTIATE_TEST_SUITE_P(DotProductCases, OpHarnessHalfPolicyOnMock, ::testing::ValuesIn(half_policy_cases()),
                         [](const ::testing::TestParamInfo<HalfCase>& info) {
                           const auto& c = harness::op_cases().at(info.param.index);
                           std::string name = std::to_string(info.param.index) + "_" +
                                              std::string(graph::op_name(c.op)) + "_" +
                                              std::string(precision_name(info.param.precision));
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace cuda_op_harness_mock_test
}  // namespace spire::rt::cuda::testing
