// matmul on Hopper's warpgroup MMA fed by tensor copies (kernels/matmul_wgmma_kernel.h) on every
// device that reports warpgroup-matrix and tensor-copy (cuda:0 of compute capability 9.0; ctest also runs these under
// the mock CUDA driver, whose PTX interpreter emulates wgmma, mbarrier and cp.async.bulk.tensor with the layouts
// checked on an H100), and refused by the features' names on devices without them.
//
// Operands are fresh random f16/bf16 values; the reference is the float64 product of those same values, with the f32
// error bound of a K-term dot product as in matmul_mma_test.cpp.
#include <cstdlib>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>

#include "backends/ptx/ptx_backend.h"
#include "ir/graph/graph.h"
#include "kernels/matmul_wgmma_kernel.h"
#include "runtime/device.h"
#include "tests/kernels/compare.h"
#include "tests/kernels/device_run.h"
#include "tests/kernels/matmul_reference.h"
#include "tests/backends/ptx/ptxas_runner.h"

namespace matmul_wgmma_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;
namespace heavy = spire::lowering::heavy;

namespace {

heavy::MatmulTiling wg(uint32_t tm, uint32_t tn, uint32_t stages) {
  heavy::MatmulTiling t{tm, tn, 64, 1, 1};
  t.warpgroups = tm / 64;
  t.stages = stages;
  return t;
}

// Devices that run the kernel: both features.
std::vector<std::string> hopper_device_ids() {
  std::vector<std::string> ids;
  for (const std::string& id : device_ids_with(kir::Feature::TensorCopy))
    for (const std::string& w : device_ids_with(kir::Feature::WarpgroupMatrix))
      if (w == id) ids.push_back(id);
  return ids;
}

struct WgmmaCase {
  graph::DType half;
  heavy::MatmulTiling tiling;
  int64_t batch, m, k, n;
  bool a_transposed = false, b_transposed = false;
  bool b_shared = false;  // one B for every batch (a broadcast operand: a 2-D tensor map)
};

std::string case_name(const WgmmaCase& c) {
  const auto& t = c.tiling;
  return fmt::format("{}_t{}x{}x{}_s{}_{}{}x{}x{}{}{}{}", graph::dtype_name(c.half), t.tile_m, t.tile_n, t.tile_k,
                     t.stages, c.batch > 1 ? fmt::format("b{}_", c.batch) : "", c.m, c.k, c.n, c.a_transposed ? "_at" : "",
                     c.b_transposed ? "_bt" : "", c.b_shared ? "_bshared" : "");
}

void PrintTo(const WgmmaCase& c, std::ostream* os) { *os << case_name(c); }

heavy::MatmulShape shape_of(const WgmmaCase& c) {
  heavy::MatmulShape s = c.batch == 1  ? heavy::matmul_shape({c.m, c.k}, {c.k, c.n})
                        : c.b_shared ? heavy::matmul_shape({c.batch, c.m, c.k}, {c.k, c.n})
                                     : heavy::matmul_shape({c.batch, c.m, c.k}, {c.batch, c.k, c.n});
  s.a_transposed = c.a_transposed;
  s.b_transposed = c.b_transposed;
  s.a_half = s.b_half = c.half == graph::DType::BF16 ? kir::Type::BF16 : kir::Type::F16;
  return s;
}

std::vector<WgmmaCase> wgmma_cases() {
  std::vector<WgmmaCase> out;
  // The heuristic's large block, 1 to 3 consumer warpgroups, 64 to 256 columns, 2 to 5 stages (2: the producer waits
  // for every stage but the first two).
  const heavy::MatmulTiling tilings[] = {wg(64, 64, 2), wg(64, 128, 4), wg(128, 256, 4), wg(192, 64, 5), wg(128, 192, 3)};
  // Whole tiles, the least tensor maps allow (rows of 8), and edges in every direction (K not a multiple of the
  // slice, more slices than stages).
  const int64_t shapes[][3] = {{64, 64, 64}, {8, 8, 8}, {72, 40, 136}, {130, 328, 24}};
  for (graph::DType h : {graph::DType::BF16, graph::DType::F16})
    for (const auto& t : tilings)
      for (const auto& s : shapes) out.push_back({h, t, 1, s[0], s[1], s[2]});
  // Operands read transposed in place (MN-major A, K-major B), batches (3-D tensor maps) and a shared B.
  for (graph::DType h : {graph::DType::BF16, graph::DType::F16}) {
    out.push_back({h, wg(64, 64, 3), 1, 72, 40, 136, true, false});
    out.push_back({h, wg(128, 64, 4), 1, 72, 200, 136, false, true});
    out.push_back({h, wg(128, 128, 2), 1, 136, 72, 40, true, true});
    out.push_back({h, wg(64, 64, 3), 3, 40, 48, 24});
    out.push_back({h, wg(64, 128, 2), 3, 40, 72, 24, false, false, true});
  }
  return out;
}

using WgmmaParam = std::tuple<std::string, WgmmaCase>;
class MatmulWarpgroupMmaOnDevice : public testing::TestWithParam<WgmmaParam> {};

TEST_P(MatmulWarpgroupMmaOnDevice, MatchesTheFloat64Product) {
  const auto& [device_id, c] = GetParam();
  rt::Device& dev = device(device_id);
  ASSERT_TRUE(dev.info().features.has(kir::Feature::WarpgroupMatrix)) << device_id;
  const graph::Shape a_shape = c.a_transposed ? graph::Shape{c.k, c.m} : graph::Shape{c.batch, c.m, c.k};
  const graph::Shape b_shape = c.b_transposed ? graph::Shape{c.n, c.k}
                               : c.b_shared   ? graph::Shape{c.k, c.n}
                                              : graph::Shape{c.batch, c.k, c.n};
  const graph::Tensor a = random_tensor(c.half, a_shape, 21), b = random_tensor(c.half, b_shape, 22);
  const ReferenceProduct want = reference_product(a, b, c.batch, c.m, c.k, c.n, c.a_transposed, c.b_transposed, c.b_shared);
  EXPECT_EQ(run_product(dev, heavy::matmul_wgmma_kernel(shape_of(c), c.tiling), a, b, c.batch, c.m, c.n, want), "");
}

// Only where the device has both features (the others' refusal is tested below); ctest runs these again on the mock
// CUDA driver, whose device is a compute capability 9.0 one.
INSTANTIATE_TEST_SUITE_P(AllDevices, MatmulWarpgroupMmaOnDevice,
                         testing::Combine(testing::ValuesIn(hopper_device_ids()),
                                          testing::ValuesIn(wgmma_cases())),
                         [](const testing::TestParamInfo<WgmmaParam>& p) {
                           return test_name_of(std::get<0>(p.param)) + "_" + case_name(std::get<1>(p.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulWarpgroupMmaOnDevice);

// The mock driver's ctest sets the variable: the cases above must have had a device to run on.
TEST(MatmulWarpgroupMmaKernel, TheExpectedDeviceWithWarpgroupMatricesIsThere) {
  if (!std::getenv("SPIRE_EXPECT_COOPERATIVE_MATRIX")) GTEST_SKIP() << "SPIRE_EXPECT_COOPERATIVE_MATRIX not set";
  EXPECT_FALSE(hopper_device_ids().empty());
}

class MatmulWarpgroupMmaRefusal : public testing::TestWithParam<std::string> {};

TEST_P(MatmulWarpgroupMmaRefusal, DevicesWithoutWarpgroupMatricesOrTensorCopiesRefuseTheKernelByName) {
  rt::Device& dev = device(GetParam());
  const kir::Features& f = dev.info().features;
  if (f.has(kir::Feature::WarpgroupMatrix) && f.has(kir::Feature::TensorCopy))
    GTEST_SKIP() << GetParam() << " has warpgroup-matrix and tensor-copy";
  const std::string what =
      product_refusal(dev, heavy::matmul_wgmma_kernel(shape_of({graph::DType::BF16, {}, 1, 64, 64, 64}), wg(64, 64, 3)));
  ASSERT_NE(what, "") << "a warpgroup-matrix kernel ran on " << GetParam();
  const bool named = (!f.has(kir::Feature::WarpgroupMatrix) && what.find("warpgroup-matrix") != std::string::npos) ||
                     (!f.has(kir::Feature::TensorCopy) && what.find("tensor-copy") != std::string::npos);
  EXPECT_TRUE(named) << what;
}

INSTANTIATE_TEST_SUITE_P(AllDevices, MatmulWarpgroupMmaRefusal, testing::ValuesIn(device_ids()),
                         [](const testing::TestParamInfo<std::string>& p) { return test_name_of(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulWarpgroupMmaRefusal);

TEST(MatmulWarpgroupMmaKernel, RefusesShapesAndTilingsItCannotCompute) {
  const heavy::MatmulShape bf16 = shape_of({graph::DType::BF16, {}, 1, 64, 64, 64});
  heavy::MatmulShape f32 = bf16;
  f32.a_half = f32.b_half = std::nullopt;
  EXPECT_THROW(heavy::matmul_wgmma_kernel(f32, wg(64, 64, 3)), std::invalid_argument);
  EXPECT_THROW(heavy::matmul_wgmma_kernel(shape_of({graph::DType::BF16, {}, 1, 64, 60, 64}), wg(64, 64, 3)),
               std::invalid_argument);  // A's rows of 60 elements: tensor maps need strides of whole 16 bytes
  heavy::MatmulTiling shallow = wg(64, 64, 3);
  shallow.tile_k = 32;  // the slice must be one 128-byte swizzled row
  EXPECT_THROW(heavy::matmul_wgmma_kernel(bf16, shallow), std::invalid_argument);
  EXPECT_THROW(heavy::matmul_wgmma_kernel(bf16, wg(64, 96, 3)), std::invalid_argument);   // not whole 64-column copies
  EXPECT_THROW(heavy::matmul_wgmma_kernel(bf16, wg(64, 512, 3)), std::invalid_argument);  // past 256 columns
  EXPECT_THROW(heavy::matmul_wgmma_kernel(bf16, wg(64, 64, 1)), std::invalid_argument);   // 1 stage
  EXPECT_THROW(heavy::matmul_wgmma_kernel(bf16, wg(320, 64, 3)), std::invalid_argument);  // a box past 256 rows
  heavy::MatmulTiling odd = wg(64, 64, 3);
  odd.tile_m = 96;  // not 64 rows per warpgroup
  EXPECT_THROW(heavy::matmul_wgmma_kernel(bf16, odd), std::invalid_argument);
  EXPECT_THROW(heavy::matmul_wgmma_kernel(bf16, heavy::MatmulTiling{64, 64, 16, 4, 4}), std::invalid_argument);
  // A batched A with a B broadcast along one of two batch dimensions: no single stride between B's batches.
  heavy::MatmulShape partial = heavy::matmul_shape({2, 3, 64, 64}, {2, 1, 64, 64});
  partial.a_half = partial.b_half = kir::Type::BF16;
  EXPECT_THROW(heavy::matmul_wgmma_kernel(partial, wg(64, 64, 3)), std::invalid_argument);
  EXPECT_NO_THROW(heavy::matmul_wgmma_kernel(bf16, wg(64, 64, 2)));
}

heavy::Limits hopper() {
  heavy::Limits l;
  l.async_copy = l.cooperative_matrix = l.warpgroup_matrix = l.tensor_copy = true;
  l.max_invocations = 1024;
  l.shared_bytes = 227 * 1024;
  return l;
}

// Every tiling the tuner may pick, in both 16-bit types and all four operand layouts, assembles for sm_90a (where the
// GPU is absent this is as far as the PTX gets here) and is refused for sm_80, which has no wgmma.
TEST(MatmulWarpgroupMmaKernel, PtxAssemblesForHopperAndIsRefusedElsewhere) {
  const auto ptxas = ptx::testing::find_ptxas();
  int assembled = 0;
  for (graph::DType half : {graph::DType::BF16, graph::DType::F16})
    for (int layout = 0; layout < 4; ++layout) {
      const heavy::MatmulShape s = shape_of({half, {}, 1, 304, 200, 504, (layout & 1) != 0, (layout & 2) != 0});
      const std::vector<heavy::MatmulTiling> candidates = heavy::matmul_wgmma_candidates(s, hopper());
      for (size_t i = 0; i < candidates.size(); ++i) {
        // Every candidate in bf16 with plain operands; a few of each other combination (ptxas takes a while).
        if ((half != graph::DType::BF16 || layout != 0) && i % 8 != 0) continue;
        const kir::Kernel k = heavy::matmul_wgmma_kernel(s, candidates[i]).kernel;
        EXPECT_THROW(ptx::compile(k, ptx::Target{80}), ptx::CompileError) << k.name;
        const std::string text = ptx::compile(k, ptx::Target{90});
        EXPECT_NE(text.find(".target sm_90a"), std::string::npos) << k.name;
        EXPECT_NE(text.find("wgmma.mma_async.sync.aligned.m64n"), std::string::npos) << k.name;
        if (!ptxas) continue;
        const ptx::testing::AssembleResult r = ptx::testing::assemble(*ptxas, text, 90);
        EXPECT_TRUE(r.ok) << k.name << ":\n" << r.log;
        ++assembled;
      }
    }
  if (!ptxas) GTEST_SKIP() << "ptxas not found: the wgmma PTX was generated but not assembled";
  EXPECT_GE(assembled, 30);
}

// The producer/consumer protocol as PTX: barriers initialized by one thread and fenced for the copy engine, one
// expect_tx arrival per stage announcing both operands' bytes, 128-byte-swizzled copies completing on the barriers,
// consumers spinning on try_wait.parity, wgmma.fence before each run of multiplies, one batch left in flight, and
// swizzled descriptors (bit 62).
TEST(MatmulWarpgroupMmaKernel, PtxFollowsTheProducerConsumerProtocol) {
  const kir::Kernel k = heavy::matmul_wgmma_kernel(shape_of({graph::DType::BF16, {}, 1, 256, 256, 256}), wg(128, 128, 4)).kernel;
  const std::string text = ptx::compile(k, ptx::Target{90});
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("mbarrier.init.shared::cta.b64"), 8u);  // 4 full + 4 empty
  EXPECT_EQ(count("fence.mbarrier_init.release.cluster;"), 1u);
  EXPECT_EQ(count(".param .align 64 .b8 p_map"), 2u);
  EXPECT_EQ(count("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r"), 1u);
  EXPECT_NE(text.find(fmt::format("], {};", (128 + 128) * 64 * 2)), std::string::npos);  // bytes per stage
  // A K-major: one 64 x 128 copy; B MN-major: two 64 x 64 copies.
  EXPECT_EQ(count("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"), 3u);
  EXPECT_EQ(count("mbarrier.try_wait.parity.shared::cta.b64"), 2u);  // the producer's empty, the consumers' full
  EXPECT_NE(text.find(".extern .shared .align 1024"), std::string::npos);
  const size_t first_mma = text.find("wgmma.mma_async");
  ASSERT_NE(first_mma, std::string::npos);
  EXPECT_LT(text.rfind("wgmma.fence.sync.aligned;", first_mma), first_mma);
  EXPECT_NE(text.find("wgmma.wait_group.sync.aligned 1;"), std::string::npos);
  EXPECT_NE(text.find("4611686"), std::string::npos);  // the swizzle bit (1 << 62 = 4611686018427387904) in descriptors
}

// An H100's 227 KiB holds 4 stages of 128x256x64 (192 KiB plus the barriers); 163 KiB only 3; smaller products take
// smaller blocks with deeper pipelines; a device without either feature, operands whose rows are not whole 16 bytes,
// or an empty K get none.
TEST(MatmulWarpgroupMmaKernel, HeuristicTakesTheLargestBlockAndDeepestPipelineThatFit) {
  const heavy::MatmulShape big = shape_of({graph::DType::BF16, {}, 1, 8192, 8192, 8192});
  heavy::Limits l = hopper();
  EXPECT_EQ(heavy::choose_matmul_wgmma_tiling(big, l), wg(128, 256, 4));
  EXPECT_EQ(heavy::wgmma_shared_bytes(wg(128, 256, 4)), 192u * 1024 + 64);
  l.shared_bytes = 163 * 1024;
  EXPECT_EQ(heavy::choose_matmul_wgmma_tiling(big, l), wg(128, 256, 3));
  l = hopper();
  EXPECT_EQ(heavy::choose_matmul_wgmma_tiling(shape_of({graph::DType::BF16, {}, 1, 1024, 1024, 1024}), l), wg(64, 128, 6));
  EXPECT_EQ(heavy::choose_matmul_wgmma_tiling(shape_of({graph::DType::BF16, {}, 1, 40, 64, 40}), l), wg(64, 64, 8));
  EXPECT_TRUE(heavy::matmul_fits_warpgroup_mma(big, kir::Type::F32, l));
  EXPECT_FALSE(heavy::matmul_fits_warpgroup_mma(shape_of({graph::DType::BF16, {}, 1, 64, 64, 60}), kir::Type::F32, l));
  EXPECT_FALSE(heavy::matmul_fits_warpgroup_mma(shape_of({graph::DType::BF16, {}, 1, 64, 0, 64}), kir::Type::F32, l));
  l.tensor_copy = false;
  EXPECT_FALSE(heavy::matmul_fits_warpgroup_mma(big, kir::Type::F32, l));
  l = hopper();
  l.warpgroup_matrix = false;
  EXPECT_FALSE(heavy::matmul_fits_warpgroup_mma(big, kir::Type::F32, l));
}

TEST(MatmulWarpgroupMmaKernel, TilingRoundTripsThroughItsConfigText) {
  const heavy::MatmulTiling t = wg(128, 256, 4);
  EXPECT_EQ(t.config().text(), "tile_m=128,tile_n=256,tile_k=64,warpgroups=2,stages=4");
  EXPECT_EQ(heavy::MatmulTiling::from(t.config()), t);
  EXPECT_EQ(t.invocations(), 384u);  // two consumer warpgroups and the producer
  EXPECT_TRUE(t.warpgroup_mma());
  EXPECT_FALSE(t.tensor_cores());
}

}  // namespace
}  // namespace matmul_wgmma_test
