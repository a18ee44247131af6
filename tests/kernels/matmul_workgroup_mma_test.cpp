// matmul on workgroup matrices (kernels/matmul_workgroup_mma_kernel.h) on every device that reports
// workgroup-matrix (NVIDIA's Vulkan driver through VK_NV_cooperative_matrix2; no device here has it, so the device
// cases run on the GPU machine), refused by the feature's name on devices without it, and its tilings.
//
// Operands are fresh random f16/bf16 values; the reference is the float64 product of those same values, with the
// f32 error bound of a K-term dot product (tests/kernels/compare.h).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>

#include "backends/ptx/ptx_backend.h"
#include "ir/graph/graph.h"
#include "kernels/matmul_workgroup_mma_kernel.h"
#include "runtime/device.h"
#include "tests/kernels/compare.h"
#include "tests/kernels/device_run.h"
#include "tests/kernels/matmul_reference.h"

namespace matmul_workgroup_mma_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;
namespace heavy = spire::lowering::heavy;

namespace {

heavy::MatmulTiling wgm(uint32_t tm, uint32_t tn, uint32_t tk, uint32_t unroll = 1) {
  heavy::MatmulTiling t{tm, tn, tk, 1, 1};
  t.workgroup_matrix = true;
  t.unroll = unroll;
  return t;
}

struct WgmCase {
  graph::DType half;
  heavy::MatmulTiling tiling;
  int64_t batch, m, k, n;
  bool a_transposed = false, b_transposed = false;
};

std::string case_name(const WgmCase& c) {
  const auto& t = c.tiling;
  return fmt::format("{}_t{}x{}x{}_u{}_{}{}x{}x{}{}{}", graph::dtype_name(c.half), t.tile_m, t.tile_n, t.tile_k, t.unroll,
                     c.batch > 1 ? fmt::format("b{}_", c.batch) : "", c.m, c.k, c.n, c.a_transposed ? "_at" : "",
                     c.b_transposed ? "_bt" : "");
}

void PrintTo(const WgmCase& c, std::ostream* os) { *os << case_name(c); }

heavy::MatmulShape shape_of(const WgmCase& c) {
  heavy::MatmulShape s = c.batch > 1 ? heavy::matmul_shape({c.batch, c.m, c.k}, {c.batch, c.k, c.n})
                                     : heavy::matmul_shape({c.m, c.k}, {c.k, c.n});
  s.a_transposed = c.a_transposed;
  s.b_transposed = c.b_transposed;
  s.a_half = s.b_half = c.half == graph::DType::BF16 ? kir::Type::BF16 : kir::Type::F16;
  return s;
}

std::vector<WgmCase> wgm_cases() {
  std::vector<WgmCase> out;
  const heavy::MatmulTiling tilings[] = {wgm(64, 64, 16), wgm(64, 64, 64, 4), wgm(128, 128, 32), wgm(128, 256, 64, 2),
                                         wgm(256, 128, 16, 4), wgm(32, 96, 48)};
  // Whole tiles, one element of everything, and edges in every direction (K not a multiple of the slice).
  const int64_t shapes[][3] = {{128, 256, 256}, {1, 1, 1}, {33, 65, 70}, {130, 17, 129}};
  for (graph::DType h : {graph::DType::BF16, graph::DType::F16})
    for (const auto& t : tilings)
      for (const auto& s : shapes) out.push_back({h, t, 1, s[0], s[1], s[2]});
  // Operands read transposed in place, and a batch whose operands start on 16 bytes (40 x 48 and 48 x 24).
  for (graph::DType h : {graph::DType::BF16, graph::DType::F16}) {
    out.push_back({h, wgm(64, 64, 32), 1, 70, 40, 90, true, false});
    out.push_back({h, wgm(64, 64, 32), 1, 70, 40, 90, false, true});
    out.push_back({h, wgm(64, 64, 32), 1, 70, 40, 90, true, true});
    out.push_back({h, wgm(64, 64, 16, 2), 3, 40, 48, 24});
  }
  return out;
}

using WgmParam = std::tuple<std::string, WgmCase>;
class MatmulWorkgroupMatrixOnDevice : public testing::TestWithParam<WgmParam> {};

TEST_P(MatmulWorkgroupMatrixOnDevice, MatchesTheFloat64Product) {
  const auto& [device_id, c] = GetParam();
  rt::Device& dev = device(device_id);
  ASSERT_TRUE(dev.info().features.has(kir::Feature::WorkgroupMatrix)) << device_id;
  const graph::Shape a_shape = c.a_transposed ? graph::Shape{c.k, c.m} : graph::Shape{c.batch, c.m, c.k};
  const graph::Shape b_shape = c.b_transposed ? graph::Shape{c.n, c.k} : graph::Shape{c.batch, c.k, c.n};
  const graph::Tensor a = random_tensor(c.half, a_shape, 21), b = random_tensor(c.half, b_shape, 22);
  const ReferenceProduct want = reference_product(a, b, c.batch, c.m, c.k, c.n, c.a_transposed, c.b_transposed);
  EXPECT_EQ(run_product(dev, heavy::matmul_workgroup_mma_kernel(shape_of(c), c.tiling), a, b, c.batch, c.m, c.n, want), "");
}

INSTANTIATE_TEST_SUITE_P(AllDevices, MatmulWorkgroupMatrixOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids_with(kir::Feature::WorkgroupMatrix)),
                                          testing::ValuesIn(wgm_cases())),
                         [](const testing::TestParamInfo<WgmParam>& p) {
                           return test_name_of(std::get<0>(p.param)) + "_" + case_name(std::get<1>(p.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulWorkgroupMatrixOnDevice);

class MatmulWorkgroupMatrixRefusal : public testing::TestWithParam<std::string> {};

TEST_P(MatmulWorkgroupMatrixRefusal, DevicesWithoutWorkgroupMatricesRefuseTheKernelByName) {
  rt::Device& dev = device(GetParam());
  if (dev.info().features.has(kir::Feature::WorkgroupMatrix)) GTEST_SKIP() << GetParam() << " has workgroup-matrix";
  const std::string what = product_refusal(
      dev, heavy::matmul_workgroup_mma_kernel(shape_of({graph::DType::BF16, wgm(64, 64, 32), 1, 64, 64, 64}),
                                              wgm(64, 64, 32)));
  ASSERT_NE(what, "") << "a workgroup-matrix kernel ran on " << GetParam();
  EXPECT_NE(what.find("workgroup-matrix"), std::string::npos) << what;
}

INSTANTIATE_TEST_SUITE_P(AllDevices, MatmulWorkgroupMatrixRefusal, testing::ValuesIn(device_ids()),
                         [](const testing::TestParamInfo<std::string>& p) { return test_name_of(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulWorkgroupMatrixRefusal);

TEST(MatmulWorkgroupMatrixKernel, RefusesShapesAndTilingsItCannotCompute) {
  const heavy::MatmulShape f32 = heavy::matmul_shape({64, 64}, {64, 64});
  EXPECT_THROW(heavy::matmul_workgroup_mma_kernel(f32, wgm(64, 64, 32)), std::invalid_argument);  // f32 operands
  const heavy::MatmulShape bf16 = shape_of({graph::DType::BF16, {}, 1, 64, 64, 64});
  EXPECT_THROW(heavy::matmul_workgroup_mma_kernel(bf16, wgm(48, 64, 32)), std::invalid_argument);   // 48 rows
  EXPECT_THROW(heavy::matmul_workgroup_mma_kernel(bf16, wgm(64, 64, 24)), std::invalid_argument);   // K slice of 24
  EXPECT_THROW(heavy::matmul_workgroup_mma_kernel(bf16, wgm(64, 64, 32, 9)), std::invalid_argument);  // unroll 9
  EXPECT_THROW(heavy::matmul_workgroup_mma_kernel(bf16, heavy::MatmulTiling{64, 64, 16, 4, 4}), std::invalid_argument);
  EXPECT_NO_THROW(heavy::matmul_workgroup_mma_kernel(bf16, wgm(32, 96, 48, 3)));
  // A batch of 3 x 5 operands starts off 16 bytes: refused (the lowering keeps the subgroup kernel there).
  const heavy::MatmulShape odd = shape_of({graph::DType::BF16, {}, 2, 3, 5, 8});
  EXPECT_FALSE(heavy::matmul_fits_workgroup_mma(odd, kir::Type::F32));
  EXPECT_THROW(heavy::matmul_workgroup_mma_kernel(odd, wgm(64, 64, 32)), std::invalid_argument);
  EXPECT_TRUE(heavy::matmul_fits_workgroup_mma(shape_of({graph::DType::F16, {}, 3, 40, 48, 24}), kir::Type::F32));
}

// The kernel is Vulkan's alone: the PTX backend refuses it by the feature's name.
TEST(MatmulWorkgroupMatrixKernel, PtxRefusesItByName) {
  const kir::Kernel k =
      heavy::matmul_workgroup_mma_kernel(shape_of({graph::DType::BF16, {}, 1, 64, 64, 64}), wgm(64, 64, 32)).kernel;
  try {
    ptx::compile(k, ptx::Target{90});
    FAIL() << "PTX for a workgroup-matrix kernel";
  } catch (const ptx::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("workgroup-matrix"), std::string::npos) << e.what();
  }
}

// 128x256 blocks 32 deep where an H100 still gets 128 of them, else 128x128, else 64x64; candidates unrolled 4 deep
// take the deepest unroll (4, 2, 1) that divides the slices.
TEST(MatmulWorkgroupMatrixKernel, HeuristicAndCandidates) {
  auto bf16 = [](int64_t m, int64_t k, int64_t n) { return shape_of({graph::DType::BF16, {}, 1, m, k, n}); };
  EXPECT_EQ(heavy::choose_matmul_workgroup_mma_tiling(bf16(8192, 8192, 8192)), wgm(128, 256, 32));
  EXPECT_EQ(heavy::choose_matmul_workgroup_mma_tiling(bf16(2048, 2048, 2048)), wgm(128, 256, 32));  // 128 blocks
  EXPECT_EQ(heavy::choose_matmul_workgroup_mma_tiling(bf16(1536, 1536, 1536)), wgm(128, 128, 32));
  EXPECT_EQ(heavy::choose_matmul_workgroup_mma_tiling(bf16(512, 768, 3072)), wgm(64, 64, 32));
  auto has = [](const std::vector<heavy::MatmulTiling>& c, const heavy::MatmulTiling& t) {
    return std::find(c.begin(), c.end(), t) != c.end();
  };
  EXPECT_TRUE(has(heavy::matmul_workgroup_mma_candidates(bf16(512, 64 * 8, 768)), wgm(64, 64, 64, 4)));
  EXPECT_TRUE(has(heavy::matmul_workgroup_mma_candidates(bf16(512, 64 * 6, 768)), wgm(64, 64, 64, 2)));
  EXPECT_TRUE(has(heavy::matmul_workgroup_mma_candidates(bf16(512, 64 * 47, 768)), wgm(64, 64, 64, 1)));
  EXPECT_FALSE(has(heavy::matmul_workgroup_mma_candidates(bf16(512, 64 * 47, 768)), wgm(64, 64, 64, 4)));
  const auto c = heavy::matmul_workgroup_mma_candidates(bf16(2048, 2048, 2048));
  EXPECT_EQ(c.front(), heavy::choose_matmul_workgroup_mma_tiling(bf16(2048, 2048, 2048)));
  EXPECT_TRUE(has(c, wgm(256, 256, 16, 4)));
  for (const auto& t : c) EXPECT_NO_THROW(heavy::matmul_workgroup_mma_kernel(bf16(2048, 2048, 2048), t)) << t.config().text();
  // A small product leaves out blocks far larger than it.
  for (const auto& t : heavy::matmul_workgroup_mma_candidates(bf16(40, 64, 40))) EXPECT_LE(t.tile_m, 64u);
}

TEST(MatmulWorkgroupMatrixKernel, TilingRoundTripsThroughItsConfigText) {
  const heavy::MatmulTiling t = wgm(128, 256, 64, 4);
  EXPECT_EQ(t.config().text(), "tile_m=128,tile_n=256,tile_k=64,workgroup_matrix=1,unroll=4");
  EXPECT_EQ(heavy::MatmulTiling::from(t.config()), t);
  EXPECT_EQ(t.invocations(), 256u);
  EXPECT_THROW(heavy::MatmulTiling::from(heavy::Config::parse("tile_m=64,tile_n=64,tile_k=64,workgroup_matrix=2,unroll=1")),
               std::invalid_argument);
}

}  // namespace
}  // namespace matmul_workgroup_mma_test
