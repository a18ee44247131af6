// matmul on tensor cores (kernels/matmul_mma_kernel.h) on every device that reports
// cooperative-matrix (cuda:0 of sm_80 and newer; ctest also runs these under the mock CUDA driver, whose PTX
// interpreter emulates wmma), and refused by the feature's name on devices without it.
//
// Operands are fresh random f16/bf16 values; the reference is the float64 product of those same values. The
// products of two 16-bit values are exact in f32 and the sums are f32, so the error bound is the f32 one of a
// K-term dot product: |error| <= 1e-5 * sum_k |a_ik b_kj| (K <= 130 here).
#include <cstdlib>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <ostream>

#include "backends/ptx/ptx_backend.h"
#include "backends/spirv/copy_plan.h"
#include "ir/graph/graph.h"
#include "kernels/matmul_mma_kernel.h"
#include "runtime/device.h"
#include "tests/support/sweep_sample.h"
#include "tests/kernels/compare.h"
#include "tests/kernels/device_run.h"
#include "tests/kernels/mma_tiling.h"
#include "tests/kernels/matmul_reference.h"
#include "tests/backends/ptx/ptxas_runner.h"

namespace matmul_mma_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;
namespace heavy = spire::lowering::heavy;

namespace {

// The same tiling with its K loop unrolled by its stage count.
heavy::MatmulTiling unrolled(heavy::MatmulTiling t) {
  t.unroll = t.stages;
  return t;
}

// The same tiling with `n` more subgroups that only copy the operands.
heavy::MatmulTiling copying(heavy::MatmulTiling t, uint32_t n) {
  t.producers = n;
  return t;
}

// The same tiling with B's [column][k] tile rows unpadded.
heavy::MatmulTiling unpadded(heavy::MatmulTiling t) {
  t.b_unpadded = true;
  return t;
}

struct MmaCase {
  graph::DType half;
  heavy::MatmulTiling tiling;
  int64_t batch, m, k, n;
  bool a_transposed = false, b_transposed = false;
};

std::string case_name(const MmaCase& c) {
  const auto& t = c.tiling;
  return fmt::format("{}_t{}x{}x{}_w{}x{}_s{}{}{}{}_{}{}x{}x{}{}{}", graph::dtype_name(c.half), t.tile_m, t.tile_n,
                     t.tile_k, t.warps_m, t.warps_n, t.stages, t.unroll > 1 ? "u" : "",
                     t.producers ? fmt::format("p{}", t.producers) : "", t.b_unpadded ? "bu" : "",
                     c.batch > 1 ? fmt::format("b{}_", c.batch) : "", c.m, c.k, c.n, c.a_transposed ? "_at" : "",
                     c.b_transposed ? "_bt" : "");
}

void PrintTo(const MmaCase& c, std::ostream* os) { *os << case_name(c); }

std::vector<MmaCase> mma_cases() {
  std::vector<MmaCase> out;
  const heavy::MatmulTiling tilings[] = {mma(32, 32, 32, 2, 2), mma(64, 64, 16, 2, 2), mma(64, 64, 32, 4, 1),
                                         mma(128, 128, 32, 2, 4), mma(128, 64, 32, 4, 2),
                                         mma(64, 64, 64, 2, 2), mma(64, 64, 16, 2, 2, 3), mma(32, 32, 16, 2, 2, 4),
                                         // vulkan:0's heuristic for large products (48 KiB of workgroup memory)
                                         // where an operand cannot copy, and the one where both do (below)
                                         mma(128, 256, 16, 4, 4),
                                         // 78 KiB: dynamic shared memory on CUDA
                                         mma(128, 128, 32, 2, 2, 4),
                                         // K loops unrolled by the depth (whole laps and the rounds after them, or
                                         // none), results in turns of 4 subgroups
                                         unrolled(mma(64, 64, 16, 2, 2, 3)), unrolled(mma(32, 32, 16, 2, 2, 2)),
                                         // (vulkan:0's heuristic: 8 subgroups, the result in two turns of 4)
                                         unrolled(mma(128, 256, 16, 2, 4, 3)),
                                         // subgroups that only copy, beside the multiplying ones: rolled and
                                         // unrolled, 2 and 3 stages, one or two of them, results in turns
                                         copying(mma(64, 64, 16, 2, 2, 3), 1),
                                         copying(unrolled(mma(32, 32, 16, 2, 2, 2)), 2),
                                         copying(unrolled(mma(128, 256, 16, 2, 4, 3)), 2),
                                         copying(unrolled(mma(128, 256, 16, 2, 4, 3)), 4)};
  // Whole tiles, one element of everything, and edges in every direction (K not a multiple of the slice).
  const int64_t shapes[][3] = {{64, 64, 64}, {1, 1, 1}, {33, 65, 70}, {130, 17, 129}};
  for (graph::DType h : {graph::DType::BF16, graph::DType::F16})
    for (const auto& t : tilings)
      for (const auto& s : shapes) out.push_back({h, t, 1, s[0], s[1], s[2]});
  // Operands read transposed in place, and a batch, on the heuristic's tiling for each.
  for (graph::DType h : {graph::DType::BF16, graph::DType::F16}) {
    out.push_back({h, mma(64, 64, 32, 2, 2), 1, 70, 40, 90, true, false});
    out.push_back({h, mma(64, 64, 32, 2, 2), 1, 70, 40, 90, false, true});
    out.push_back({h, mma(32, 32, 32, 2, 2), 3, 33, 48, 20});
    // and through copying subgroups
    out.push_back({h, copying(unrolled(mma(64, 64, 16, 2, 2, 3)), 2), 1, 72, 40, 96, true, false});
    out.push_back({h, copying(unrolled(mma(64, 64, 16, 2, 2, 3)), 2), 1, 72, 40, 96, false, true});
    out.push_back({h, copying(mma(32, 32, 32, 2, 2), 1), 3, 33, 48, 24});
    // B's [column][k] rows unpadded: vulkan:0's heuristic for a B read transposed, rolled and unrolled, 16 and 32
    // deep, whole tiles and edges (a B read as [k][column] ignores it)
    const heavy::MatmulTiling rows[] = {unpadded(copying(unrolled(mma(128, 256, 16, 2, 4, 3)), 4)),
                                        unpadded(mma(64, 64, 32, 2, 2, 3)), unpadded(unrolled(mma(32, 32, 16, 2, 2, 2)))};
    for (const auto& t : rows) {
      out.push_back({h, t, 1, 128, 64, 256, false, true});
      out.push_back({h, t, 1, 130, 40, 129, false, true});
      out.push_back({h, t, 1, 72, 40, 96, true, true});
    }
    out.push_back({h, unpadded(mma(64, 64, 32, 2, 2, 3)), 1, 72, 40, 96});
  }
  return out;
}

heavy::MatmulShape shape_of(const MmaCase& c) {
  heavy::MatmulShape s = c.batch > 1 ? heavy::matmul_shape({c.batch, c.m, c.k}, {c.batch, c.k, c.n})
                                     : heavy::matmul_shape({c.m, c.k}, {c.k, c.n});
  s.a_transposed = c.a_transposed;
  s.b_transposed = c.b_transposed;
  const kir::Type h = c.half == graph::DType::BF16 ? kir::Type::BF16 : kir::Type::F16;
  s.a_half = s.b_half = h;
  return s;
}

using MmaParam = std::tuple<std::string, MmaCase>;
class MatmulMmaOnDevice : public testing::TestWithParam<MmaParam> {};

TEST_P(MatmulMmaOnDevice, MatchesTheFloat64Product) {
  const auto& [device_id, c] = GetParam();
  rt::Device& dev = device(device_id);
  ASSERT_TRUE(dev.info().features.has(kir::Feature::CooperativeMatrix)) << device_id;
  // The buffers hold what the kernel reads: A (or A^T) and B (or B^T), batch-major.
  const graph::Shape a_shape = c.a_transposed ? graph::Shape{c.k, c.m} : graph::Shape{c.batch, c.m, c.k};
  const graph::Shape b_shape = c.b_transposed ? graph::Shape{c.n, c.k} : graph::Shape{c.batch, c.k, c.n};
  const graph::Tensor a = random_tensor(c.half, a_shape, 11), b = random_tensor(c.half, b_shape, 12);
  const ReferenceProduct want = reference_product(a, b, c.batch, c.m, c.k, c.n, c.a_transposed, c.b_transposed);

  // Both ways of staging the operands: element by element, and 16-byte asynchronous copies where the device has
  // them (and the shape allows: otherwise the kernel falls back, which the name shows).
  // A variant whose workgroup memory exceeds the device's (vulkan:0 of an H100 has 48 KiB, cuda:0 227) cannot run
  // there: the lowering never offers it (heavy::Limits), so it is skipped, by name when no variant is left.
  int ran = 0;
  for (bool copies : {false, true}) {
    if (copies && !dev.info().features.has(kir::Feature::AsyncCopy)) continue;
    if (heavy::mma_staging(shape_of(c), c.tiling, copies).shared_bytes > dev.info().shared_memory_bytes) continue;
    EXPECT_EQ(run_product(dev, heavy::matmul_mma_kernel(shape_of(c), c.tiling, copies), a, b, c.batch, c.m, c.n, want),
              "");
    ++ran;
  }
  if (ran == 0)
    GTEST_SKIP() << "tiling " << c.tiling.config().text() << " needs more workgroup memory than " << device_id << " has";
}

// Only where the device has cooperative matrices (the others' refusal is tested below): on a machine without one
// the suite is not instantiated, and ctest runs it again on the mock CUDA driver.
INSTANTIATE_TEST_SUITE_P(AllDevices, MatmulMmaOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids_with(kir::Feature::CooperativeMatrix)),
                                          testing::ValuesIn(mma_cases())),
                         [](const testing::TestParamInfo<MmaParam>& p) {
                           return test_name_of(std::get<0>(p.param)) + "_" + case_name(std::get<1>(p.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulMmaOnDevice);

// Where a device with cooperative matrices is expected (the mock driver's ctest sets the variable), the cases above
// must have had one to run on: an empty instantiation would pass without running a kernel.
TEST(MatmulMmaKernel, TheExpectedDeviceWithCooperativeMatricesIsThere) {
  if (!std::getenv("SPIRE_EXPECT_COOPERATIVE_MATRIX")) GTEST_SKIP() << "SPIRE_EXPECT_COOPERATIVE_MATRIX not set";
  EXPECT_FALSE(device_ids_with(kir::Feature::CooperativeMatrix).empty());
}

class MatmulMmaRefusal : public testing::TestWithParam<std::string> {};

TEST_P(MatmulMmaRefusal, DevicesWithoutCooperativeMatricesRefuseTheKernelByName) {
  rt::Device& dev = device(GetParam());
  if (dev.info().features.has(kir::Feature::CooperativeMatrix)) GTEST_SKIP() << GetParam() << " has cooperative-matrix";
  const std::string what = product_refusal(
      dev, heavy::matmul_mma_kernel(shape_of({graph::DType::BF16, mma(64, 64, 32, 2, 2), 1, 64, 64, 64}),
                                    mma(64, 64, 32, 2, 2), false));
  ASSERT_NE(what, "") << "a cooperative-matrix kernel ran on " << GetParam();
  EXPECT_NE(what.find("cooperative-matrix"), std::string::npos) << what;
}

INSTANTIATE_TEST_SUITE_P(AllDevices, MatmulMmaRefusal, testing::ValuesIn(device_ids()),
                         [](const testing::TestParamInfo<std::string>& p) { return test_name_of(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulMmaRefusal);

TEST(MatmulMmaKernel, RefusesShapesAndTilingsItCannotCompute) {
  const heavy::MatmulShape f32 = heavy::matmul_shape({64, 64}, {64, 64});
  EXPECT_THROW(heavy::matmul_mma_kernel(f32, mma(64, 64, 32, 2, 2), true), std::invalid_argument);  // f32 operands
  heavy::MatmulShape mixed = f32;
  mixed.a_half = kir::Type::BF16;
  mixed.b_half = kir::Type::F16;
  EXPECT_THROW(heavy::matmul_mma_kernel(mixed, mma(64, 64, 32, 2, 2), true), std::invalid_argument);
  heavy::MatmulShape bf16 = f32;
  bf16.a_half = bf16.b_half = kir::Type::BF16;
  EXPECT_THROW(heavy::matmul_mma_kernel(bf16, mma(64, 64, 24, 2, 2), true), std::invalid_argument);  // K slice of 24
  EXPECT_THROW(heavy::matmul_mma_kernel(bf16, mma(64, 48, 32, 2, 2), true), std::invalid_argument);  // 24 columns a warp
  EXPECT_THROW(heavy::matmul_mma_kernel(bf16, heavy::MatmulTiling{64, 64, 16, 4, 4}, true), std::invalid_argument);  // SIMT
  EXPECT_THROW(heavy::matmul_mma_kernel(bf16, mma(64, 64, 32, 2, 2, 1), true), std::invalid_argument);  // 1 stage
  EXPECT_NO_THROW(heavy::matmul_mma_kernel(bf16, mma(64, 48, 32, 2, 3), true));
  // At most 8 copying subgroups (without copies they stage elements with the others).
  EXPECT_THROW(heavy::matmul_mma_kernel(bf16, copying(mma(64, 64, 32, 2, 2), 9), true), std::invalid_argument);
  EXPECT_NO_THROW(heavy::matmul_mma_kernel(bf16, copying(mma(64, 64, 32, 2, 2), 2), true));
  // A batched operand read transposed in place (only rank-2 ones are).
  heavy::MatmulShape batched = shape_of({graph::DType::BF16, {}, 3, 64, 64, 64});
  batched.a_transposed = true;
  EXPECT_THROW(heavy::matmul_mma_kernel(batched, mma(64, 64, 32, 2, 2), true), std::invalid_argument);
}

TEST(MatmulMmaKernel, CopiesWhereRowsStartOn16BytesAndPipelinesWhenBothOperandsDo) {
  heavy::MatmulShape s = shape_of({graph::DType::BF16, {}, 1, 100, 64, 200});
  const heavy::MatmulTiling t = mma(64, 64, 32, 2, 2);
  heavy::MmaStaging p = heavy::mma_staging(s, t, true);
  EXPECT_TRUE(p.a_copies && p.b_copies);
  EXPECT_EQ(p.stages, 2u);
  EXPECT_NE(heavy::matmul_mma_kernel(s, t, true).kernel.name.find("_c2_"), std::string::npos);
  EXPECT_EQ(heavy::mma_staging(s, t, false).stages, 1u);
  const heavy::MatmulTiling deep = mma(64, 64, 32, 2, 2, 3);
  EXPECT_EQ(heavy::mma_staging(s, deep, true).stages, 3u);
  // Three stages of both padded operand tiles (64 x 40 and 32 x 72 bf16) and four subgroups' 16x16 f32 tiles.
  EXPECT_EQ(heavy::mma_staging(s, deep, true).shared_bytes, 3u * (64 * 40 + 32 * 72) * 2 + 4 * 256 * 4);
  EXPECT_NE(heavy::matmul_mma_kernel(s, deep, true).kernel.name.find("_c3_"), std::string::npos);
  s.n = 201;  // B's rows no longer start on 16 bytes
  p = heavy::mma_staging(s, t, true);
  EXPECT_TRUE(p.a_copies);
  EXPECT_FALSE(p.b_copies);
  EXPECT_EQ(p.stages, 1u);
}

// Unrolled by its 3 stages, NVIDIA Vulkan's 128x256x16 pipeline fits 48 KiB (the result leaves through 4 subgroups'
// tiles in turns, not 16), its slices' copies are distinct statements, so the SPIR-V backend lands each at the wait
// that covers it (rolled, a round's copies land when the next round issues its own: one slice in flight), and the
// unroll must be the depth.
TEST(MatmulMmaKernel, UnrollingByTheDepthKeepsTheWholePipelineInFlightOnVulkan) {
  const heavy::MatmulShape s = shape_of({graph::DType::BF16, {}, 1, 512, 512, 512});
  const heavy::MatmulTiling rolled = mma(128, 256, 16, 4, 4, 3), t = unrolled(rolled);
  const heavy::MmaStaging p = heavy::mma_staging(s, t, true);
  EXPECT_EQ(p.result_tiles, 4u);
  EXPECT_EQ(heavy::mma_staging(s, rolled, true).result_tiles, 16u);
  // Three stages of 128 x (16 + 8) and 16 x (256 + 8) bf16, and four 16x16 f32 tiles.
  EXPECT_EQ(p.shared_bytes, 3u * (128 * 24 + 16 * 264) * 2 + 4 * 256 * 4);
  EXPECT_LE(p.shared_bytes, 48u * 1024);
  EXPECT_GT(heavy::mma_staging(s, rolled, true).shared_bytes, 48u * 1024);

  const kir::Kernel k = heavy::matmul_mma_kernel(s, t, true).kernel;
  EXPECT_NE(k.name.find("_c3_u_"), std::string::npos) << k.name;
  const spirv::CopyPlan plan = spirv::plan_copy_sites(k.body);
  EXPECT_TRUE(plan.lands_before_rerun.empty());
  // 32 slices: 2 before the loop, 3 in its lap (10 laps), the last 2 after it; each an A and a B copy (per
  // invocation, one of each here).
  EXPECT_EQ(plan.site_of.size(), 14u);
  // The prologue's copies (sites 0 to 3, numbered in body order) land at the wait right after it, the kernel's first,
  // and no wait in the loop has one to land: the SPIR-V backend then holds no prologue copy's registers through
  // the loop.
  std::vector<const kir::CopyWait*> waits;
  std::function<void(const kir::Block&)> walk = [&](const kir::Block& b) {
    for (const kir::Stmt& st : b.stmts) {
      if (const auto* w = std::get_if<kir::CopyWait>(&st)) waits.push_back(w);
      else if (const auto* i = std::get_if<kir::If>(&st)) {
        walk(*i->then_body);
        if (i->else_body) walk(*i->else_body);
      } else if (const auto* f = std::get_if<kir::For>(&st)) walk(*f->body);
    }
  };
  walk(k.body);
  ASSERT_FALSE(waits.empty());
  EXPECT_EQ(waits.front()->pending, 0u);
  EXPECT_EQ(plan.lands.at(waits.front()), (std::vector<uint32_t>{0, 1, 2, 3}));
  for (size_t w = 1; w < waits.size(); ++w) {
    if (!plan.lands.count(waits[w])) continue;
    for (uint32_t site : plan.lands.at(waits[w])) EXPECT_GE(site, 4u) << "wait " << w;
  }
  const spirv::CopyPlan rolled_plan = spirv::plan_copy_sites(heavy::matmul_mma_kernel(s, rolled, true).kernel.body);
  EXPECT_EQ(rolled_plan.lands_before_rerun.size(), 2u);

  heavy::MatmulTiling wrong = rolled;
  wrong.unroll = 2;
  EXPECT_THROW(heavy::matmul_mma_kernel(s, wrong, true), std::invalid_argument);
  // Without copies there is no pipeline to unroll: the tiling runs rolled, one stage.
  EXPECT_EQ(heavy::matmul_mma_kernel(s, t, false).kernel.name.find("_u_"), std::string::npos);
  EXPECT_EQ(t.config().text(), "tile_m=128,tile_n=256,tile_k=16,warps_m=4,warps_n=4,stages=3,unroll=3");
  EXPECT_EQ(heavy::MatmulTiling::from(t.config()), t);
}

// Every tiling the tuner may pick, in both 16-bit types, assembles for sm_80 and sm_90 (where the GPU is absent
// this is as far as the PTX gets here), and the backend refuses sm_75, whose wmma has no bf16.
TEST(MatmulMmaKernel, PtxAssemblesOnAmpereAndHopperAndIsRefusedBelow) {
  const auto ptxas = ptx::testing::find_ptxas();
  heavy::Limits cuda;
  cuda.shared_bytes = 163 * 1024;  // an A100's opt-in limit: past 48 KiB the kernels go dynamic
  cuda.max_invocations = 1024;
  cuda.ptx = true;
  int assembled = 0;
  for (graph::DType half : {graph::DType::BF16, graph::DType::F16}) {
    const heavy::MatmulShape s = shape_of({half, {}, 1, 304, 200, 504});
    cuda.async_copy = half == graph::DType::BF16;  // both staging paths
    // A representative subset unless SPIRE_FULL_SWEEPS=1 (ctest -L full: spire_kernels_ptx_sweeps_full).
    for (const heavy::MatmulTiling& t : testing_support::sampled(heavy::matmul_mma_candidates(s, cuda))) {
      const kir::Kernel k = heavy::matmul_mma_kernel(s, t, cuda.async_copy).kernel;
      EXPECT_THROW(ptx::compile(k, ptx::Target{75}), ptx::CompileError) << k.name;
      for (uint32_t sm : {80u, 90u}) {
        const std::string text = ptx::compile(k, ptx::Target{sm});
        EXPECT_NE(text.find("wmma.mma.sync.aligned.row.row.m16n16k16"), std::string::npos) << k.name;
        // An unrolled tiling's PTX differs from its rolled twin's only in the loop: one architecture is enough.
        if (!ptxas || (t.unroll > 1 && sm == 80)) continue;
        const ptx::testing::AssembleResult r = ptx::testing::assemble(*ptxas, text, sm);
        EXPECT_TRUE(r.ok) << k.name << " for sm_" << sm << ":\n" << r.log;
        ++assembled;
      }
    }
  }
  // Copying subgroups (offered off PTX only, but the kernel is the same kir everywhere): barriers reached from each
  // role's own loop.
  const heavy::MatmulShape s = shape_of({graph::DType::BF16, {}, 1, 304, 200, 504});
  for (const heavy::MatmulTiling& t :
       {copying(unrolled(mma(128, 256, 16, 2, 4, 3)), 4), copying(mma(64, 64, 32, 2, 2, 3), 2)}) {
    const kir::Kernel k = heavy::matmul_mma_kernel(s, t, true).kernel;
    EXPECT_NE(k.name.find("_p"), std::string::npos) << k.name;
    if (!ptxas) continue;
    const ptx::testing::AssembleResult r = ptx::testing::assemble(*ptxas, ptx::compile(k, ptx::Target{90}), 90);
    EXPECT_TRUE(r.ok) << k.name << ":\n" << r.log;
    ++assembled;
  }
  if (!ptxas) GTEST_SKIP() << "ptxas not found: the tensor-core PTX was generated but not assembled";
  EXPECT_GE(assembled, 22);
}

// The heuristic's block and depth follow the workgroup memory: an H100's 227 KiB holds 4 stages of 256x128x64,
// an A100's 163 KiB not even 3, so 128x128x32 4 deep; 48 KiB takes 128x256x16 of 2 x 4 subgroups, 3 deep and
// unrolled by them, fed by 4 copying subgroups off PTX (2 deep of 4 x 4 where the operands cannot copy). Small
// products take small blocks.
TEST(MatmulMmaKernel, HeuristicTakesTheLargestBlockAndDeepestPipelineThatFit) {
  const heavy::MatmulShape big = shape_of({graph::DType::BF16, {}, 1, 8192, 8192, 8192});
  heavy::Limits l;
  l.async_copy = l.cooperative_matrix = true;
  l.max_invocations = 1024;
  l.shared_bytes = 227 * 1024;
  EXPECT_EQ(heavy::choose_matmul_mma_tiling(big, l), mma(256, 128, 64, 4, 2, 4));
  l.shared_bytes = 163 * 1024;
  EXPECT_EQ(heavy::choose_matmul_mma_tiling(big, l), mma(128, 128, 32, 2, 2, 4));
  l.shared_bytes = 48 * 1024;  // NVIDIA's Vulkan driver: 128x256 blocks with 16-deep slices (measured there)
  // with 4 subgroups that only copy, where copies pass through registers (not through PTX's cp.async)
  EXPECT_EQ(heavy::choose_matmul_mma_tiling(big, l), copying(unrolled(mma(128, 256, 16, 2, 4, 3)), 4));
  l.ptx = true;
  EXPECT_EQ(heavy::choose_matmul_mma_tiling(big, l), unrolled(mma(128, 256, 16, 2, 4, 3)));
  l.ptx = false;
  EXPECT_LE(heavy::mma_staging(big, heavy::choose_matmul_mma_tiling(big, l), true).shared_bytes, l.shared_bytes);
  // B read as [N, K] (a Linear layer's weight): 3 stages fit 48 KiB only with B's rows unpadded (55 KiB padded).
  const heavy::MatmulShape linear = shape_of({graph::DType::BF16, {}, 1, 8192, 8192, 8192, false, true});
  const heavy::MatmulTiling deep = copying(unrolled(mma(128, 256, 16, 2, 4, 3)), 4);
  EXPECT_GT(heavy::mma_staging(linear, deep, true).shared_bytes, l.shared_bytes);
  EXPECT_EQ(heavy::choose_matmul_mma_tiling(linear, l), unpadded(deep));
  EXPECT_LE(heavy::mma_staging(linear, unpadded(deep), true).shared_bytes, l.shared_bytes);
  // and the kernel declares what the plan counts
  EXPECT_EQ(heavy::matmul_mma_kernel(linear, unpadded(deep), true).kernel.shared_bytes(),
            heavy::mma_staging(linear, unpadded(deep), true).shared_bytes);
  // The tuner is offered unpadded tilings where padded ones do not fit, and only tilings that fit.
  bool offered = false;
  for (const heavy::MatmulTiling& t : heavy::matmul_mma_candidates(linear, l)) {
    EXPECT_LE(heavy::mma_staging(linear, t, true).shared_bytes, l.shared_bytes) << t.config().text();
    offered = offered || t.b_unpadded;
  }
  EXPECT_TRUE(offered);
  // ... which changes nothing for a B read as [K, N]
  EXPECT_EQ(heavy::mma_staging(big, unpadded(deep), true).shared_bytes, heavy::mma_staging(big, deep, true).shared_bytes);
  // An operand whose rows do not start on 16 bytes is staged element by element, one stage: 4 x 4 subgroups then.
  const heavy::MatmulShape odd = shape_of({graph::DType::BF16, {}, 1, 8192, 8190, 8192});
  EXPECT_EQ(heavy::choose_matmul_mma_tiling(odd, l), mma(128, 256, 16, 4, 4, 2));
  EXPECT_EQ(heavy::choose_matmul_mma_tiling(shape_of({graph::DType::BF16, {}, 1, 1024, 1024, 1024}), l),
            mma(64, 64, 32, 2, 2, 4));  // 32 blocks of 128x256 (or 64 of 128x128) would leave most of an H100 idle
  l.async_copy = false;  // element-by-element staging is one stage, whatever the tiling says
  EXPECT_EQ(heavy::mma_staging(big, heavy::choose_matmul_mma_tiling(big, l), false).stages, 1u);
  l.async_copy = true;
  l.shared_bytes = 227 * 1024;
  EXPECT_LE(heavy::mma_staging(big, heavy::choose_matmul_mma_tiling(big, l), true).shared_bytes, l.shared_bytes);
  EXPECT_EQ(heavy::choose_matmul_mma_tiling(shape_of({graph::DType::BF16, {}, 1, 512, 768, 3072}), l).tile_m, 64u);
  EXPECT_EQ(heavy::choose_matmul_mma_tiling(shape_of({graph::DType::BF16, {}, 1, 40, 64, 40}), l).tile_m, 32u);
}

TEST(MatmulMmaKernel, TilingRoundTripsThroughItsConfigText) {
  const heavy::MatmulTiling t = mma(128, 128, 32, 2, 4);
  EXPECT_EQ(t.config().text(), "tile_m=128,tile_n=128,tile_k=32,warps_m=2,warps_n=4,stages=2");
  EXPECT_EQ(heavy::MatmulTiling::from(t.config()), t);
  EXPECT_EQ(t.invocations(), 256u);
  const heavy::MatmulTiling deep = mma(64, 64, 16, 2, 2, 4);
  EXPECT_EQ(heavy::MatmulTiling::from(deep.config()), deep);
  const heavy::MatmulTiling fed = copying(unrolled(mma(128, 256, 16, 2, 4, 3)), 2);
  EXPECT_EQ(fed.config().text(), "tile_m=128,tile_n=256,tile_k=16,warps_m=2,warps_n=4,stages=3,unroll=3,producers=2");
  EXPECT_EQ(heavy::MatmulTiling::from(fed.config()), fed);
  EXPECT_EQ(fed.invocations(), 320u);
  const heavy::MatmulTiling rows = unpadded(fed);
  EXPECT_EQ(rows.config().text(),
            "tile_m=128,tile_n=256,tile_k=16,warps_m=2,warps_n=4,stages=3,unroll=3,producers=2,b_unpadded=1");
  EXPECT_EQ(heavy::MatmulTiling::from(rows.config()), rows);
  EXPECT_THROW(heavy::MatmulTiling::from(heavy::Config{{"tile_m", 64}, {"tile_n", 64}, {"tile_k", 32}, {"warps_m", 2},
                                                       {"warps_n", 2}, {"b_unpadded", 2}}),
               std::invalid_argument);
  // Configs tuned before pipelines had a depth were two stages deep.
  EXPECT_EQ(heavy::MatmulTiling::from(heavy::Config{{"tile_m", 128}, {"tile_n", 128}, {"tile_k", 32}, {"warps_m", 2},
                                                    {"warps_n", 4}}),
            t);
}

}  // namespace
}  // namespace matmul_mma_test
