// matmul on every device: every (M, K, N) in {1, 7, 16, 33, 65}^3 (edges of 16- and 64-wide tiles), batched
// and broadcast batches, f64, and every tiling of the template on awkward shapes.
//
// Tolerance: f32 results may differ from the float64 reference by the rounding of a K-term dot product:
// |error| <= 1e-5 * sum_k |a_ik b_kj| (K <= 130 here, so K * 2^-24 < 1e-5). f64: 1e-12 of the same.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>

#include "ir/graph/evaluator.h"
#include "ir/kernel/printer.h"
#include "kernels/matmul_kernel.h"
#include "kernels/tiled_gemm.h"
#include "tests/kernels/device_run.h"
#include "tests/kernels/matmul_reference.h"
#include "tests/kernels/op_check.h"

namespace matmul_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;
namespace heavy = spire::lowering::heavy;

namespace {

struct MatmulCase {
  graph::Shape a, b;
  graph::DType dtype = graph::DType::F32;
};

std::vector<MatmulCase> matmul_cases() {
  std::vector<MatmulCase> cases;
  const int64_t sizes[] = {1, 7, 16, 33, 65};
  for (int64_t m : sizes)
    for (int64_t k : sizes)
      for (int64_t n : sizes) cases.push_back({{m, k}, {k, n}});
  // Batches: equal, broadcast on either side, rank-2 against batched, and size-1 dims on both sides.
  cases.push_back({{2, 3, 7, 16}, {3, 16, 5}});
  cases.push_back({{1, 7, 16}, {4, 16, 33}});
  cases.push_back({{7, 16}, {2, 16, 9}});
  cases.push_back({{2, 1, 5, 3}, {1, 4, 3, 6}});
  cases.push_back({{3, 65, 33}, {3, 33, 65}});
  cases.push_back({{130, 70}, {70, 129}});  // edges in both directions
  cases.push_back({{2, 300, 70}, {70, 270}});  // 64x64 blocks (2 x 5 x 5 of them)
  cases.push_back({{8, 300, 33}, {33, 700}});  // 128x128 blocks (8 x 3 x 6 of them)
  cases.push_back({{8, 784}, {784, 120}});  // LeNet's first fully connected layer (16*7*7 features)
  cases.push_back({{33, 65}, {65, 7}, graph::DType::F64});
  cases.push_back({{2, 16, 33}, {33, 16}, graph::DType::F64});
  cases.push_back({{65, 33}, {33, 66}, graph::DType::F64});
  return cases;
}

std::string shape_name(const graph::Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

void PrintTo(const MatmulCase& c, std::ostream* os) {
  *os << shape_name(c.a) << " x " << shape_name(c.b) << " " << graph::dtype_name(c.dtype);
}

Tolerance tolerance_for(graph::DType t) { return t == graph::DType::F64 ? Tolerance{1e-12, 0} : Tolerance{1e-5, 0}; }

using MatmulParam = std::tuple<std::string, MatmulCase>;
class MatmulOnDevice : public testing::TestWithParam<MatmulParam> {};

TEST_P(MatmulOnDevice, MatchesTheReference) {
  const auto& [device_id, c] = GetParam();
  graph::Graph g;
  auto a = g.input("a", c.dtype, c.a);
  auto b = g.input("b", c.dtype, c.b);
  g.output("y", g.matmul(a, b));
  std::map<std::string, graph::Tensor> inputs{{"a", random_tensor(c.dtype, c.a, 1)}, {"b", random_tensor(c.dtype, c.b, 2)}};
  check_against_reference(device_id, g, inputs, tolerance_for(c.dtype), Scale::AbsoluteInputs);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, MatmulOnDevice, testing::Combine(testing::ValuesIn(device_ids()), testing::ValuesIn(matmul_cases())),
                         [](const testing::TestParamInfo<MatmulParam>& p) {
                           const MatmulCase& c = std::get<1>(p.param);
                           return fmt::format("{}_{}_by_{}_{}", test_name_of(std::get<0>(p.param)), shape_name(c.a),
                                              shape_name(c.b), graph::dtype_name(c.dtype));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulOnDevice);

// The template's tilings, forced, on shapes that leave partial tiles everywhere.
struct TilingCase {
  heavy::MatmulTiling tiling;
  graph::Shape a, b;
};

std::vector<TilingCase> tiling_cases() {
  const heavy::MatmulTiling tilings[] = {{16, 16, 16, 1, 1}, {64, 64, 16, 4, 4}, {32, 32, 8, 2, 2}, {16, 64, 16, 1, 4},
                                         {64, 16, 32, 4, 1}, {8, 8, 3, 1, 1}, {128, 128, 8, 8, 8},
                                         {64, 16, 8, 4, 4}};
  const std::pair<graph::Shape, graph::Shape> shapes[] = {
      {{1, 1}, {1, 1}}, {{7, 33}, {33, 65}}, {{65, 16}, {16, 7}}, {{33, 65}, {65, 33}}, {{2, 70, 5}, {5, 67}}};
  std::vector<TilingCase> out;
  for (const auto& t : tilings)
    for (const auto& [a, b] : shapes) out.push_back({t, a, b});
  return out;
}

void PrintTo(const TilingCase& c, std::ostream* os) {
  *os << "tiling " << c.tiling.tile_m << "x" << c.tiling.tile_n << "x" << c.tiling.tile_k << " on " << shape_name(c.a)
      << " x " << shape_name(c.b);
}

using TilingParam = std::tuple<std::string, TilingCase>;
class MatmulTilingOnDevice : public testing::TestWithParam<TilingParam> {};

TEST_P(MatmulTilingOnDevice, MatchesTheReference) {
  const auto& [device_id, c] = GetParam();
  graph::Graph g;
  auto a = g.input("a", graph::DType::F32, c.a);
  auto b = g.input("b", graph::DType::F32, c.b);
  auto y = g.matmul(a, b);
  g.output("y", y);
  std::map<std::string, graph::Tensor> inputs{{"a", random_tensor(graph::DType::F32, c.a, 3)},
                                              {"b", random_tensor(graph::DType::F32, c.b, 4)}};
  auto reference = graph::evaluate(g, inputs);
  auto scale = graph::evaluate(g, abs_of(inputs));

  rt::Device& dev = device(device_id);
  uint64_t messages_before = validation_messages();
  DeviceRun run(dev, g);
  run.set(a, inputs["a"]);
  run.set(b, inputs["b"]);
  heavy::HeavyKernel k = heavy::matmul_kernel(heavy::matmul_shape(c.a, c.b), kir::Type::F32, c.tiling);
  run.launch(std::move(k.kernel), {run.buffer_of(a), run.buffer_of(b), run.buffer_of(y)}, {}, k.groups);
  run.run();
  EXPECT_EQ(compare(run.get(y), reference.at("y"), {1e-5, 0}, &scale.at("y")), "") << run.kernels().at(0).name;
  EXPECT_EQ(validation_messages(), messages_before) << "the Vulkan validation layer reported messages";
}

INSTANTIATE_TEST_SUITE_P(AllDevices, MatmulTilingOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids()), testing::ValuesIn(tiling_cases())),
                         [](const testing::TestParamInfo<TilingParam>& p) {
                           const TilingCase& c = std::get<1>(p.param);
                           const auto& t = c.tiling;
                           return fmt::format("{}_t{}x{}x{}_r{}x{}_{}_by_{}", test_name_of(std::get<0>(p.param)), t.tile_m,
                                              t.tile_n, t.tile_k, t.reg_m, t.reg_n, shape_name(c.a), shape_name(c.b));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulTilingOnDevice);

// The GEMM body asks for two workgroups per core where its register estimate leaves room (the 8x8 fp32 tiling of 256
// invocations: 128 registers each), and not where it would squeeze them (the same tiling in f64, a 64-invocation one).
TEST(MatmulKernel, AsksForTwoWorkgroupsPerCoreWhereTheRegistersAllow) {
  const heavy::MatmulShape s = heavy::matmul_shape({512, 512}, {512, 512});
  const heavy::MatmulTiling big{128, 128, 8, 8, 8};
  EXPECT_EQ(heavy::matmul_kernel(s, kir::Type::F32, big).kernel.min_workgroups_per_core, 2u);
  EXPECT_EQ(heavy::matmul_kernel(s, kir::Type::F64, big).kernel.min_workgroups_per_core, 0u);
  EXPECT_EQ(heavy::matmul_kernel(s, kir::Type::F32, heavy::MatmulTiling{32, 32, 8, 4, 4}).kernel.min_workgroups_per_core, 0u);
}

// Few blocks over a long K (LeNet's weight gradients at batch 8192) split K into a power of two of parts that gives at
// least 256 workgroups, each part keeping at least 8 slices; short K or enough blocks do not split.
TEST(MatmulKernel, SplitsKIntoEnoughWorkgroupsForTwoPerCore) {
  auto tiling = [](int64_t m, int64_t k, int64_t n) { return heavy::choose_matmul_tiling(heavy::matmul_shape({m, k}, {k, n}), kir::Type::F32); };
  EXPECT_EQ(tiling(120, 8192, 784), (heavy::MatmulTiling{64, 64, 16, 4, 4, 16}));  // 26 blocks of 64x64
  EXPECT_EQ(tiling(84, 8192, 120), (heavy::MatmulTiling{64, 64, 16, 4, 4, 64}));   // 4 blocks
  EXPECT_EQ(tiling(10, 8192, 84), (heavy::MatmulTiling{16, 16, 16, 1, 1, 64}));    // 6 blocks of 16x16
  EXPECT_EQ(tiling(120, 2048, 784).splits, 16u);  // 128 slices: at most 16 parts of 8
  EXPECT_EQ(tiling(120, 2048, 200).splits, 16u);  // 8 blocks would want 32
  EXPECT_EQ(tiling(120, 1024, 784).splits, 1u);   // K too short to split
  EXPECT_EQ(tiling(1024, 8192, 1024).splits, 1u); // enough blocks
}

// Operands read in place transposed, and batches, with edges in every direction or none, on tilings whose staging
// reads 4 elements at a time (extents along the contiguous direction multiples of 4) and on ones that cannot.
struct TransposedCase {
  heavy::MatmulTiling tiling;
  int64_t batch, m, k, n;
  bool a_transposed, b_transposed;
};

class MatmulTransposedOnDevice : public testing::TestWithParam<std::tuple<std::string, TransposedCase>> {};

TEST_P(MatmulTransposedOnDevice, MatchesTheFloat64Product) {
  const auto& [device_id, c] = GetParam();
  const graph::Shape a_shape = c.a_transposed ? graph::Shape{c.k, c.m} : graph::Shape{c.batch, c.m, c.k};
  const graph::Shape b_shape = c.b_transposed ? graph::Shape{c.n, c.k} : graph::Shape{c.batch, c.k, c.n};
  const graph::Tensor a = random_tensor(graph::DType::F32, a_shape, 21), b = random_tensor(graph::DType::F32, b_shape, 22);
  const ReferenceProduct want = reference_product(a, b, c.batch, c.m, c.k, c.n, c.a_transposed, c.b_transposed);
  heavy::MatmulShape s = c.batch > 1 ? heavy::matmul_shape({c.batch, c.m, c.k}, {c.batch, c.k, c.n})
                                     : heavy::matmul_shape({c.m, c.k}, {c.k, c.n});
  s.a_transposed = c.a_transposed;
  s.b_transposed = c.b_transposed;
  EXPECT_EQ(run_product(device(device_id), heavy::matmul_kernel(s, kir::Type::F32, c.tiling), a, b, c.batch, c.m, c.n, want), "");
}

std::vector<TransposedCase> transposed_cases() {
  std::vector<TransposedCase> out;
  const heavy::MatmulTiling tilings[] = {{64, 64, 16, 4, 4}, {128, 128, 8, 8, 8}, {16, 16, 16, 1, 1}, {8, 8, 3, 1, 1}};
  // Whole tiles; edges everywhere with extents multiples of 4; extents that are not.
  const int64_t shapes[][3] = {{128, 64, 128}, {36, 20, 44}, {33, 21, 35}};
  for (const auto& t : tilings)
    for (const auto& sh : shapes)
      for (int tr = 0; tr < 4; ++tr) out.push_back({t, 1, sh[0], sh[1], sh[2], (tr & 1) != 0, (tr & 2) != 0});
  out.push_back({{64, 64, 16, 4, 4}, 3, 36, 20, 44, false, false});
  out.push_back({{16, 16, 16, 1, 1}, 2, 12, 8, 20, false, false});
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllDevices, MatmulTransposedOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids()), testing::ValuesIn(transposed_cases())),
                         [](const testing::TestParamInfo<std::tuple<std::string, TransposedCase>>& p) {
                           const TransposedCase& c = std::get<1>(p.param);
                           const auto& t = c.tiling;
                           return fmt::format("{}_t{}x{}x{}_r{}x{}_{}x{}x{}x{}{}{}", test_name_of(std::get<0>(p.param)),
                                              t.tile_m, t.tile_n, t.tile_k, t.reg_m, t.reg_n, c.batch, c.m, c.k, c.n,
                                              c.a_transposed ? "_at" : "", c.b_transposed ? "_bt" : "");
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulTransposedOnDevice);

// The staging reads 16 bytes at a time where the operand's contiguous extent is a multiple of 4 (and not for half
// operands, which widen element by element).
TEST(MatmulKernel, StagesFourElementsPerReadWhereExtentsAllow) {
  auto vector_reads = [](heavy::MatmulShape s) {
    const std::string text = kir::print(heavy::matmul_kernel(s, kir::Type::F32, {64, 64, 16, 4, 4}).kernel);
    return int(text.find("= load_vector a[") != std::string::npos) + 2 * int(text.find("= load_vector b[") != std::string::npos);
  };
  EXPECT_EQ(vector_reads(heavy::matmul_shape({64, 32}, {32, 64})), 3) << "both";
  EXPECT_EQ(vector_reads(heavy::matmul_shape({64, 33}, {33, 64})), 2) << "K = 33: A's rows are not 16-byte aligned";
  EXPECT_EQ(vector_reads(heavy::matmul_shape({64, 32}, {32, 65})), 1) << "N = 65: B's rows are not";
  heavy::MatmulShape half = heavy::matmul_shape({64, 32}, {32, 64});
  half.a_half = kir::Type::BF16;
  EXPECT_EQ(vector_reads(half), 2) << "a bf16 A widens element by element";
}

// The body reads its operands' slices 16 bytes at a time where each invocation's outputs come in groups of 4 (fp32
// with 4x4 or 8x8 outputs each), and element by element otherwise (f64; 2x2 outputs).
TEST(MatmulKernel, ReadsWorkgroupMemoryInVectorsWhereOutputsComeInFours) {
  const heavy::MatmulShape s = heavy::matmul_shape({512, 512}, {512, 512});
  auto vector_loads = [&](kir::Type t, const heavy::MatmulTiling& tl) {
    return kir::print(heavy::matmul_kernel(s, t, tl).kernel).find("load_shared_vector") != std::string::npos;
  };
  EXPECT_TRUE(vector_loads(kir::Type::F32, {128, 128, 8, 8, 8}));
  EXPECT_TRUE(vector_loads(kir::Type::F32, {64, 16, 8, 4, 4}));
  EXPECT_FALSE(vector_loads(kir::Type::F64, {128, 128, 8, 8, 8}));
  EXPECT_FALSE(vector_loads(kir::Type::F32, {32, 32, 8, 2, 2}));
  const heavy::GemmLayout l = heavy::tiled_gemm_layout({128, 128, 8, 8, 8}, kir::Type::F32);
  EXPECT_TRUE(l.patches);
  EXPECT_EQ(l.a_ld % 4, 0u) << "rows of A's slice must stay 16-byte aligned";
  EXPECT_FALSE(heavy::tiled_gemm_layout({64, 16, 8, 4, 4}, kir::Type::F32).patches) << "a grid 4 wide has no 8-wide patches";
}

}  // namespace
}  // namespace matmul_test
