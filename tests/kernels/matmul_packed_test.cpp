// matmul from packed operands (kernels/matmul_packed_kernel.h): each operand laid out in the device's
// fragment order by its own launch, then the product from both, on every device that reports cooperative-matrix.
// Vulkan packs f16 and bf16; PTX (cuda:0, and ctest's mock CUDA driver, whose interpreter emulates wmma) packs bf16
// only, and refuses f16 by name. The heuristic's choice and the lowering's three launches are checked too.
//
// Operands are fresh random values; the reference is the float64 product of those same values, within the f32 error
// bound of each dot product (tests/kernels/matmul_reference.h). Every buffer but the operands is poisoned.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>

#include "ir/graph/graph.h"
#include "kernels/matmul_packed_kernel.h"
#include "backends/ptx/ptx_backend.h"
#include "runtime/device.h"
#include "tests/kernels/compare.h"
#include "tests/kernels/device_run.h"
#include "tests/kernels/matmul_reference.h"
#include "tests/backends/ptx/ptxas_runner.h"

namespace matmul_packed_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;
namespace heavy = spire::lowering::heavy;

namespace {

heavy::MatmulTiling packed(uint32_t tm, uint32_t tn, uint32_t wm, uint32_t wn, uint32_t sets, uint32_t ahead) {
  heavy::MatmulTiling t{tm, tn, 16, 1, 1};
  t.warps_m = wm;
  t.warps_n = wn;
  t.stages = sets;
  t.lookahead = ahead;
  return t;
}

struct PackedCase {
  graph::DType half;
  heavy::MatmulTiling tiling;
  int64_t m, k, n;
  bool a_transposed = false, b_transposed = false;
};

std::string case_name(const PackedCase& c) {
  const auto& t = c.tiling;
  return fmt::format("{}_t{}x{}_w{}x{}_s{}_l{}_{}x{}x{}{}{}", graph::dtype_name(c.half), t.tile_m, t.tile_n, t.warps_m,
                     t.warps_n, t.stages, t.lookahead, c.m, c.k, c.n, c.a_transposed ? "_at" : "",
                     c.b_transposed ? "_bt" : "");
}

void PrintTo(const PackedCase& c, std::ostream* os) { *os << case_name(c); }

heavy::MatmulShape shape_of(const PackedCase& c) {
  heavy::MatmulShape s = heavy::matmul_shape({c.m, c.k}, {c.k, c.n});
  s.a_transposed = c.a_transposed;
  s.b_transposed = c.b_transposed;
  s.a_half = s.b_half = c.half == graph::DType::BF16 ? kir::Type::BF16 : kir::Type::F16;
  return s;
}

std::vector<PackedCase> packed_cases() {
  std::vector<PackedCase> out;
  // vulkan:0's heuristic (4 subgroups of 64x48, 8 sets, 2 slices ahead), 8 subgroups of 64x32 (8 sets, 4 ahead), one
  // fragment per subgroup with a single slice ahead, and the heuristic's choice for columns that 96-wide blocks would
  // pad too much (4 subgroups of 64x32, 8 sets, 3 ahead).
  const heavy::MatmulTiling tilings[] = {packed(128, 96, 2, 2, 8, 2), packed(128, 128, 2, 4, 8, 4),
                                         packed(32, 32, 2, 2, 2, 1), packed(128, 64, 2, 2, 8, 3)};
  // Whole blocks and whole laps; one element; edges in every direction (K not a multiple of 8: packed element by
  // element); K past several laps.
  const int64_t shapes[][3] = {{128, 256, 128}, {1, 1, 1}, {33, 65, 70}, {130, 17, 129}, {72, 520, 40}};
  for (graph::DType h : {graph::DType::BF16, graph::DType::F16}) {
    for (const auto& t : tilings)
      for (const auto& s : shapes) out.push_back({h, t, s[0], s[1], s[2]});
    // Operands read transposed in place (A^T's and B^T's packing loads column-major fragments).
    for (const auto& t : {tilings[0], tilings[2]}) {
      out.push_back({h, t, 70, 40, 90, true, false});
      out.push_back({h, t, 70, 40, 90, false, true});
      out.push_back({h, t, 130, 72, 200, true, true});
    }
  }
  return out;
}

// Packs A and B (16-byte copies or element by element) and multiplies; "" when c matches `want`.
std::string run_packed_product(rt::Device& dev, const PackedCase& c, const graph::Tensor& a, const graph::Tensor& b,
                               const ReferenceProduct& want, bool copies) {
  const heavy::MatmulShape s = shape_of(c);
  graph::Graph none;
  DeviceRun run(dev, none);
  const kir::Type h = *s.a_half;
  const int32_t a_slot = run.add_slot(h, a.numel(), "a"), b_slot = run.add_slot(h, b.numel(), "b");
  const int32_t pa = run.add_slot(h, int64_t(heavy::packed_operand_elements(s, c.tiling, false)), "a_packed");
  const int32_t pb = run.add_slot(h, int64_t(heavy::packed_operand_elements(s, c.tiling, true)), "b_packed");
  const int32_t c_slot = run.add_slot(kir::Type::F32, c.m * c.n, "c");  // poisoned by run(), as the packed forms
  run.upload(a_slot, a);
  run.upload(b_slot, b);
  for (bool is_b : {false, true}) {
    heavy::HeavyKernel pack = heavy::matmul_pack_kernel(s, c.tiling, is_b, copies);
    run.launch(std::move(pack.kernel), {is_b ? b_slot : a_slot, is_b ? pb : pa}, {}, pack.groups);
  }
  heavy::HeavyKernel product = heavy::matmul_packed_kernel(s, c.tiling);
  run.launch(std::move(product.kernel), {pa, pb, c_slot}, {}, product.groups);
  run.run();
  const graph::Tensor got = run.download(c_slot, graph::DType::F32, {1, c.m, c.n});
  const std::string problem = compare(got, want.product, {1e-5, 0}, &want.magnitude);
  return problem.empty() ? "" : run.kernels().back().name + ": " + problem;
}

using PackedParam = std::tuple<std::string, PackedCase>;
class MatmulPackedOnDevice : public testing::TestWithParam<PackedParam> {};

TEST_P(MatmulPackedOnDevice, MatchesTheFloat64Product) {
  const auto& [device_id, c] = GetParam();
  rt::Device& dev = device(device_id);
  ASSERT_TRUE(dev.info().features.has(kir::Feature::CooperativeMatrix)) << device_id;
  const graph::Shape a_shape = c.a_transposed ? graph::Shape{c.k, c.m} : graph::Shape{1, c.m, c.k};
  const graph::Shape b_shape = c.b_transposed ? graph::Shape{c.n, c.k} : graph::Shape{1, c.k, c.n};
  const graph::Tensor a = random_tensor(c.half, a_shape, 21), b = random_tensor(c.half, b_shape, 22);
  const ReferenceProduct want = reference_product(a, b, 1, c.m, c.k, c.n, c.a_transposed, c.b_transposed);
  if (dev.info().id.rfind("cuda", 0) == 0 && c.half == graph::DType::F16) {
    // wmma's f16 fragments hold 16 elements per invocation: no 16-byte share to pack.
    try {
      (void)run_packed_product(dev, c, a, b, want, false);
      ADD_FAILURE() << "an f16 fragment was packed through PTX";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("only bf16 fragments are packed"), std::string::npos) << e.what();
    }
    return;
  }
  for (bool copies : {false, true}) {
    if (copies && !dev.info().features.has(kir::Feature::AsyncCopy)) continue;
    EXPECT_EQ(run_packed_product(dev, c, a, b, want, copies), "")
        << (copies ? "packed by copies" : "packed by elements");
  }
}

// Only where the device has cooperative matrices; ctest runs these again on the mock CUDA driver, and
// MatmulMmaKernel.TheExpectedDeviceWithCooperativeMatricesIsThere checks that one was there.
INSTANTIATE_TEST_SUITE_P(AllDevices, MatmulPackedOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids_with(kir::Feature::CooperativeMatrix)),
                                          testing::ValuesIn(packed_cases())),
                         [](const testing::TestParamInfo<PackedParam>& p) {
                           return test_name_of(std::get<0>(p.param)) + "_" + case_name(std::get<1>(p.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulPackedOnDevice);

heavy::Limits vulkan_nvidia() {  // an H100's vulkan:0
  heavy::Limits l;
  l.shared_bytes = 48 * 1024;
  l.max_invocations = 1024;
  l.subgroup_size = 32;
  l.cooperative_matrix = l.async_copy = true;
  return l;
}

TEST(MatmulPackedKernel, TheHeuristicPacksLargeProductsOnlyWhereCopiesPassThroughSmallWorkgroupMemory) {
  const heavy::MatmulShape big = shape_of({graph::DType::BF16, {}, 8192, 8192, 8192});
  const auto t = heavy::choose_matmul_packed_tiling(big, vulkan_nvidia());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->config().text(), packed(128, 96, 2, 2, 8, 2).config().text());
  EXPECT_EQ(heavy::MatmulTiling::from(t->config()), *t);
  heavy::Limits ptx = vulkan_nvidia();
  ptx.ptx = true;
  EXPECT_FALSE(heavy::choose_matmul_packed_tiling(big, ptx));
  heavy::Limits roomy = vulkan_nvidia();
  roomy.shared_bytes = 64 * 1024;
  EXPECT_FALSE(heavy::choose_matmul_packed_tiling(big, roomy));
  heavy::Limits plain = vulkan_nvidia();
  plain.cooperative_matrix = false;
  EXPECT_FALSE(heavy::choose_matmul_packed_tiling(big, plain));
  // Columns that 96-wide blocks would pad by over 5% more than 64-wide ones take 128x64 blocks (N = 200: 288 against
  // 256, 12.5% more; N = 1000: 1056 against 1024, 3.1%, keeps 96).
  auto tiling_for = [](int64_t n) {
    return heavy::choose_matmul_packed_tiling(shape_of({graph::DType::BF16, {}, 1024 * 128, 512, n}), vulkan_nvidia());
  };
  EXPECT_EQ(tiling_for(200)->config().text(), packed(128, 64, 2, 2, 8, 3).config().text());
  EXPECT_EQ(tiling_for(1000)->config().text(), packed(128, 96, 2, 2, 8, 2).config().text());
  EXPECT_EQ(tiling_for(128)->config().text(), packed(128, 64, 2, 2, 8, 3).config().text());
  // Too few blocks (1023 of 128x128: 2048^3 has 256), too short a K, f32 operands.
  auto packs = [](int64_t m, int64_t k, int64_t n) {
    return heavy::choose_matmul_packed_tiling(shape_of({graph::DType::BF16, {}, m, k, n}), vulkan_nvidia()).has_value();
  };
  EXPECT_FALSE(packs(1023 * 128, 512, 128));
  EXPECT_TRUE(packs(1024 * 128, 512, 128));
  EXPECT_FALSE(packs(2048, 2048, 2048));
  EXPECT_FALSE(packs(4096, 255, 4096));
  EXPECT_FALSE(heavy::choose_matmul_packed_tiling(heavy::matmul_shape({4096, 4096}, {4096, 4096}), vulkan_nvidia()));
  // A batch.
  heavy::MatmulShape batched = heavy::matmul_shape({2, 4096, 4096}, {2, 4096, 4096});
  batched.a_half = batched.b_half = kir::Type::BF16;
  EXPECT_FALSE(heavy::choose_matmul_packed_tiling(batched, vulkan_nvidia()));
  // Every candidate builds, the heuristic first.
  const auto candidates = heavy::matmul_packed_candidates(big, vulkan_nvidia());
  ASSERT_GT(candidates.size(), 1u);
  EXPECT_EQ(candidates.front(), *t);
  for (const auto& c : candidates) EXPECT_NO_THROW(heavy::matmul_packed_kernel(big, c)) << c.config().text();
}

TEST(MatmulPackedKernel, PacksEachOperandIntoWholeBlocksAndLapsWithTheTilesReadAhead) {
  // 200 x 300 x 100 on 128x128 blocks, 8 sets, 4 ahead: A's 2 blocks of 8 tile rows, B's 1 of 8; K's 19 tiles (300 /
  // 16, rounded up) in 3 laps of 8 = 24, plus 4 read ahead = 28 tiles a row; 256 elements a tile.
  const heavy::MatmulShape s = shape_of({graph::DType::BF16, {}, 200, 300, 100});
  const heavy::MatmulTiling t = packed(128, 128, 2, 4, 8, 4);
  EXPECT_EQ(heavy::packed_operand_elements(s, t, false), 16u * 28 * 256);
  EXPECT_EQ(heavy::packed_operand_elements(s, t, true), 8u * 28 * 256);
  // One workgroup per strip of 16 stored rows and 8 tiles: A (200 x 300, K along rows) 16 x 3; B (300 x 100, K down
  // the rows) 24 x 1.
  EXPECT_EQ(heavy::matmul_pack_kernel(s, t, false, true).groups, 16u * 3);
  EXPECT_EQ(heavy::matmul_pack_kernel(s, t, true, true).groups, 24u * 1);
  EXPECT_EQ(heavy::matmul_packed_kernel(s, t).groups, 2u * 1);
}

TEST(MatmulPackedKernel, PadsColumnsToWholeBlocksOfNinetySix) {
  // The heuristic at 8192^3: 128x96 blocks, 8 sets, 2 ahead. A: 64 blocks of 8 tile rows; B: 8192 columns in 86 blocks
  // of 96 (8256 columns, 516 tiles); K's 512 tiles in 64 laps of 8, plus 2 read ahead = 514 tiles a row.
  const heavy::MatmulShape s = shape_of({graph::DType::BF16, {}, 8192, 8192, 8192});
  const heavy::MatmulTiling t = packed(128, 96, 2, 2, 8, 2);
  EXPECT_EQ(heavy::packed_operand_elements(s, t, false), 512u * 514 * 256);
  EXPECT_EQ(heavy::packed_operand_elements(s, t, true), 516u * 514 * 256);
  EXPECT_EQ(heavy::matmul_packed_kernel(s, t).groups, 64u * 86);
  // B (8192 x 8192, K down the rows): 512 strips of 16 rows, each across ceil(516 / 8) = 65 strips of 8 tiles.
  EXPECT_EQ(heavy::matmul_pack_kernel(s, t, true, true).groups, 512u * 65);
}

// bf16 shares as 16-byte global accesses of the fragment's 4 registers: ptxas takes the packing and product kernels
// of every candidate (the mock driver's interpreter runs them above; cuda:0 on the GPU machine).
TEST(MatmulPackedKernel, BF16PtxAssembles) {
  const auto ptxas = ptx::testing::find_ptxas();
  const heavy::MatmulShape s = shape_of({graph::DType::BF16, {}, 300, 200, 500});
  int assembled = 0;
  const heavy::MatmulShape big = shape_of({graph::DType::BF16, {}, 8192, 8192, 8192});
  for (const heavy::MatmulTiling& t : heavy::matmul_packed_candidates(big, vulkan_nvidia())) {
    std::vector<kir::Kernel> kernels;
    kernels.push_back(heavy::matmul_packed_kernel(s, t).kernel);
    kernels.push_back(heavy::matmul_pack_kernel(s, t, false, true).kernel);
    kernels.push_back(heavy::matmul_pack_kernel(s, t, true, false).kernel);
    for (const kir::Kernel& k : kernels) {
      const std::string text = ptx::compile(k, ptx::Target{90});
      if (k.name.find("_packed_") != std::string::npos) {
        // Coherent: the packing launch before writes what it loads (ptx_translator.cpp's non_coherent).
        EXPECT_NE(text.find("ld.global.v4.b32"), std::string::npos) << k.name;
      } else {
        EXPECT_NE(text.find("st.global.v4.b32"), std::string::npos) << k.name;
      }
      if (!ptxas) continue;
      const ptx::testing::AssembleResult r = ptx::testing::assemble(*ptxas, text, 90);
      EXPECT_TRUE(r.ok) << k.name << ":\n" << r.log;
      ++assembled;
    }
  }
  if (!ptxas) GTEST_SKIP() << "no ptxas here: the PTX was written but not assembled";
  EXPECT_GT(assembled, 0);
}

TEST(MatmulPackedKernel, RefusesShapesAndTilingsItCannotCompute) {
  const heavy::MatmulShape bf16 = shape_of({graph::DType::BF16, {}, 64, 64, 64});
  EXPECT_NO_THROW(heavy::matmul_packed_kernel(bf16, packed(64, 64, 2, 2, 2, 1)));
  EXPECT_THROW(heavy::matmul_packed_kernel(heavy::matmul_shape({64, 64}, {64, 64}), packed(64, 64, 2, 2, 2, 1)),
               std::invalid_argument);  // f32 operands
  EXPECT_THROW(heavy::matmul_packed_kernel(bf16, packed(64, 64, 2, 2, 2, 2)), std::invalid_argument);  // ahead >= sets
  EXPECT_THROW(heavy::matmul_packed_kernel(bf16, packed(64, 48, 2, 2, 2, 1)), std::invalid_argument);  // 24 columns
  heavy::MatmulTiling deep = packed(64, 64, 2, 2, 2, 1);
  deep.tile_k = 32;
  EXPECT_THROW(heavy::matmul_packed_kernel(bf16, deep), std::invalid_argument);
}

}  // namespace
}  // namespace matmul_packed_test
