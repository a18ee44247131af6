// The few-rows product (kernels/matvec_kernel.h) on every device against the float64 product, for every slice count
// and unroll its candidates hold (a sample of five in the test command): B read as [K, N] and as B^T [N, K], 16-byte
// reads (8 half elements in two reads where N or K allows and rows are at most 2), 8-byte and element ones, one to four rows (over batches too), K shorter than the slices, f16 and bf16 operands widened as they
// are read, a product per batch of B, B^T's columns n and N / 2 + n paired in one workgroup; and where the lowering takes
// it.
//
// Tolerance: the f32 sums may differ from the float64 product by a K-term dot product's rounding, within
// 1e-5 * sum_k |a_k b_k| for K <= 770 here (K * 2^-24 < 5e-5 is the worst case; random signs keep it far below).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ir/graph/graph.h"
#include "kernels/matvec_kernel.h"
#include "lowering/plan.h"
#include "lowering/tunable.h"
#include "tests/kernels/compare.h"
#include "tests/kernels/device_run.h"
#include "tests/kernels/matmul_reference.h"
#include "tests/lowering/plan_queries.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/sweep_sample.h"

namespace matvec_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;
namespace heavy = spire::lowering::heavy;

namespace {

struct MatvecCase {
  int64_t batch, m, k, n;
  bool b_transposed;
  graph::DType b_type = graph::DType::F32;
  bool a_half = false;  // A stored in B's half type too (a half policy's activations)
  bool b_batched = false;  // B [batch, K, N]: a product per batch (attention at one query)
};

heavy::MatmulShape shape_of(const MatvecCase& c) {
  heavy::MatmulShape s = c.b_batched ? heavy::matmul_shape({c.batch, c.m, c.k}, {c.batch, c.k, c.n})
                                     : heavy::matmul_shape({c.batch, c.m, c.k}, {c.k, c.n});
  s.b_transposed = c.b_transposed;
  if (c.b_type == graph::DType::BF16) s.b_half = kir::Type::BF16;
  if (c.b_type == graph::DType::F16) s.b_half = kir::Type::F16;
  if (c.a_half) s.a_half = s.b_half;
  return s;
}

class MatvecOnDevice : public testing::TestWithParam<std::tuple<std::string, MatvecCase>> {};

TEST_P(MatvecOnDevice, EverySliceCountMatchesTheFloat64Product) {
  const auto& [device_id, c] = GetParam();
  rt::Device& dev = device(device_id);
  if (c.b_type == graph::DType::BF16 && !dev.info().features.has(kir::Feature::BFloat16))
    GTEST_SKIP() << device_id << " has no bfloat16 storage";
  if (c.b_type == graph::DType::F16 && !dev.info().features.has(kir::Feature::Float16))
    GTEST_SKIP() << device_id << " has no float16 storage";
  const graph::Tensor a = random_tensor(c.a_half ? c.b_type : graph::DType::F32, {c.batch, c.m, c.k}, 31);
  graph::Shape b_shape = c.b_transposed ? graph::Shape{c.n, c.k} : graph::Shape{c.k, c.n};
  if (c.b_batched) b_shape.insert(b_shape.begin(), c.batch);
  const graph::Tensor b = random_tensor(c.b_type, b_shape, 32);
  const ReferenceProduct want =
      reference_product(a, b, c.batch, c.m, c.k, c.n, false, c.b_transposed, /*b_shared=*/!c.b_batched);
  const heavy::MatmulShape s = shape_of(c);
  ASSERT_TRUE(heavy::matmul_fits_matvec(s, kir::Type::F32, {}));
  const std::vector<heavy::MatmulTiling> tilings = heavy::matvec_candidates(s, kir::Type::F32, lowering::limits_of(dev.info()));
  ASSERT_EQ(tilings.size(), heavy::matvec_slice_candidates(s, kir::Type::F32).size() * std::size(heavy::kMatvecUnrolls));
  for (const heavy::MatmulTiling& tiling : testing_support::sampled(tilings, 5)) {
    SCOPED_TRACE(tiling.config().text());
    EXPECT_EQ(run_product(dev, heavy::matvec_kernel(s, kir::Type::F32, tiling.matvec_slices, {}, 0, tiling.unroll), a, b,
                          c.batch, c.m, c.n, want),
              "");
    // Columns n and N / 2 + n in one workgroup (MatvecPair without a combine: the same product, stored whole).
    if (heavy::matvec_pairs(s, tiling.matvec_slices)) {
      heavy::MatvecPair pair;
      pair.half = uint32_t(c.n / 2);
      EXPECT_EQ(run_product(dev, heavy::matvec_kernel(s, kir::Type::F32, tiling.matvec_slices, {}, 0, tiling.unroll, &pair),
                            a, b, c.batch, c.m, c.n, want),
                "")
          << "paired";
    }
  }
}

std::vector<MatvecCase> matvec_cases() {
  return {
      {1, 1, 768, 2304, false},  // a decoder's attention input at batch 1: 16-byte reads, every slice whole
      {1, 1, 770, 301, false},   // N not a multiple of 4: element reads; K not a multiple of any slice count
      {1, 1, 768, 300, true},    // B^T with 16-byte reads along K (and paired columns: 150 pairs)
      {1, 2, 64, 42, true, graph::DType::BF16, true},  // paired columns of bf16 B^T, two rows, a ragged last group
      {1, 1, 130, 37, true},     // B^T, K not a multiple of 4
      {2, 2, 64, 100, false},    // four rows over two batches
      {1, 3, 96, 50, true},      // three rows, B^T
      {1, 1, 5, 3, false},       // K shorter than the fewest slices' units
      {1, 1, 256, 96, false, graph::DType::BF16},  // 8 lanes of 16 bits
      {1, 1, 256, 100, false, graph::DType::BF16},  // N a multiple of 4 but not 8: 4 lanes
      {1, 3, 64, 96, false, graph::DType::F16},     // three rows: 4 lanes
      {1, 2, 200, 72, true, graph::DType::F16},
      {1, 1, 256, 96, false, graph::DType::BF16, true},  // a bf16 policy's product: both operands half
      {1, 1, 200, 72, true, graph::DType::F16, true},
      {12, 1, 64, 44, false, graph::DType::F32, false, true},   // attention's scores: [heads, 1, 64] x [heads, 64, T]
      {12, 1, 43, 64, false, graph::DType::F32, false, true},   // and values: [heads, 1, T] x [heads, T, 64]
      {3, 2, 30, 21, false, graph::DType::F32, false, true},    // two rows a batch, element reads
      {12, 1, 64, 44, true, graph::DType::F32, false, true},    // scores against the keys read transposed: K [heads, T, 64]
      {2, 3, 30, 9, true, graph::DType::F32, false, true},      // ... K not a multiple of 4
  };
}

INSTANTIATE_TEST_SUITE_P(AllDevices, MatvecOnDevice,
                         testing::Combine(testing::ValuesIn(device_ids()),
                                          testing::ValuesIn(matvec_cases())),
                         [](const testing::TestParamInfo<std::tuple<std::string, MatvecCase>>& p) {
                           const MatvecCase& c = std::get<1>(p.param);
                           return fmt::format("{}_{}x{}x{}x{}{}{}_{}{}", test_name_of(std::get<0>(p.param)), c.batch,
                                              c.m, c.k, c.n, c.b_transposed ? "_bt" : "", c.b_batched ? "_bb" : "",
                                              c.a_half ? "a_" : "", graph::dtype_name(c.b_type));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatvecOnDevice);

// The heuristic's slice counts and unrolls, worked out by hand from its rules (the fewest slices giving 256 workgroups,
// else the most; on a GPU 16 units an iteration up to 256 workgroups, past them the fewest of 4, 8 and 16 that take a
// slice's share of K in one iteration, else 4; 4 on a CPU device).
TEST(MatvecKernel, SliceHeuristic) {
  const heavy::Limits gpu{};
  // [768, 2304], 16-byte reads: 1024 / S columns a workgroup; 64 slices give 144 workgroups, 128 give 288 (6 rows of K
  // each).
  EXPECT_EQ(heavy::choose_matvec_slices(shape_of({1, 1, 768, 2304, false}), kir::Type::F32, gpu), 128u);
  // [3072, 768]: 128 slices (the most) give 96 workgroups.
  EXPECT_EQ(heavy::choose_matvec_slices(shape_of({1, 1, 3072, 768, false}), kir::Type::F32, gpu), 128u);
  // B^T [2304, 768]: 256 / S columns a workgroup, so 9 S workgroups: 32 slices give 288, of 6 units of 4 a slice.
  EXPECT_EQ(heavy::choose_matvec_slices(shape_of({1, 1, 768, 2304, true}), kir::Type::F32, gpu), 32u);
  // B^T [2048, 8192] (Llama's down projection): 8 S workgroups, so 32 slices.
  EXPECT_EQ(heavy::choose_matvec_slices(shape_of({1, 1, 8192, 2048, true}), kir::Type::F32, gpu), 32u);
  // A tied head [768, 50257] (element reads): 2 slices (the fewest) already give 393 workgroups.
  EXPECT_EQ(heavy::choose_matvec_slices(shape_of({1, 1, 768, 50257, false}), kir::Type::F32, gpu), 2u);
  // [2048, 8192] in bf16, 8 lanes: 2048 / S columns a workgroup, so 4 S workgroups: 64 slices.
  EXPECT_EQ(heavy::choose_matvec_slices(shape_of({1, 1, 2048, 8192, false, graph::DType::BF16}), kir::Type::F32, gpu),
            64u);
  // B^T [8192, 2048] in bf16 (Llama's gate and up projections as a decode step reads them), 8 lanes: 32 S workgroups,
  // so 8 slices (the fewest).
  EXPECT_EQ(heavy::choose_matvec_slices(shape_of({1, 1, 2048, 8192, true, graph::DType::BF16}), kir::Type::F32, gpu),
            8u);
  // K = 64 in units of 4 along B^T: one workgroup whatever the slices, so the most the candidates hold (16).
  EXPECT_EQ(heavy::choose_matvec_slices(shape_of({1, 1, 64, 10, true}), kir::Type::F32, gpu), 16u);
  // [768, 2304] at 128 slices: 288 workgroups, each slice 6 of the 768 rows of K, so 8 units; B^T [2304, 768] at 32:
  // 288, each slice 6 of 192 units of 4, so 8; B^T [2048, 8192] at 32: 256, so 16; the bf16 B^T [16384, 2048] (Llama's
  // gate and up projections merged) at 8 slices (the fewest): 512, each slice 32 of 256 units of 8, so 4.
  EXPECT_EQ(heavy::choose_matvec_tiling(shape_of({1, 1, 768, 2304, false}), kir::Type::F32, gpu).unroll, 8u);
  EXPECT_EQ(heavy::choose_matvec_tiling(shape_of({1, 1, 768, 2304, true}), kir::Type::F32, gpu).unroll, 8u);
  EXPECT_EQ(heavy::choose_matvec_tiling(shape_of({1, 1, 8192, 2048, true}), kir::Type::F32, gpu).unroll, 16u);
  const auto merged = shape_of({1, 1, 2048, 16384, true, graph::DType::BF16});
  EXPECT_EQ(heavy::choose_matvec_slices(merged, kir::Type::F32, gpu), 8u);
  EXPECT_EQ(heavy::choose_matvec_tiling(merged, kir::Type::F32, gpu).unroll, 4u);
  // GPT-2's bf16 head, B^T [50257, 768] at 8 slices: 1571 workgroups, each slice 12 of 96 units of 8: more than 8, so
  // 4 at a time (16 in one iteration held too many registers).
  const auto head = shape_of({1, 1, 768, 50257, true, graph::DType::BF16});
  EXPECT_EQ(heavy::choose_matvec_slices(head, kir::Type::F32, gpu), 8u);
  EXPECT_EQ(heavy::choose_matvec_tiling(head, kir::Type::F32, gpu).unroll, 4u);
  heavy::Limits cpu;
  cpu.cpu = true;
  EXPECT_EQ(heavy::choose_matvec_tiling(shape_of({1, 1, 768, 2304, false}), kir::Type::F32, cpu).unroll,
            heavy::kMatvecUnroll);
  EXPECT_EQ(heavy::choose_matvec_slices(shape_of({1, 1, 768, 2304, false}), kir::Type::F32, cpu), 2u);
}

TEST(MatvecKernel, FitsAFewRowsByOneMatrix) {
  const heavy::Limits gpu{};
  EXPECT_TRUE(heavy::matmul_fits_matvec(shape_of({1, 4, 64, 64, false}), kir::Type::F32, gpu));
  EXPECT_FALSE(heavy::matmul_fits_matvec(shape_of({1, 5, 64, 64, false}), kir::Type::F32, gpu)) << "5 rows";
  EXPECT_TRUE(heavy::matmul_fits_matvec(heavy::matmul_shape({2, 4, 64}, {2, 64, 8}), kir::Type::F32, gpu))
      << "a batched B, 4 rows a batch";
  EXPECT_FALSE(heavy::matmul_fits_matvec(heavy::matmul_shape({2, 5, 64}, {2, 64, 8}), kir::Type::F32, gpu))
      << "a batched B, 5 rows a batch";
  heavy::MatmulShape at = shape_of({1, 1, 64, 64, false});
  at.a_transposed = true;
  EXPECT_FALSE(heavy::matmul_fits_matvec(at, kir::Type::F32, gpu)) << "A transposed";
  // Four rows of 16-byte reads: 4 x 256 x 4 f32 partial sums are 16 KiB, the least workgroup memory Vulkan offers.
  heavy::Limits small;
  small.shared_bytes = 16383;
  EXPECT_FALSE(heavy::matmul_fits_matvec(shape_of({1, 4, 64, 64, false}), kir::Type::F32, small));
}

// Where the lowering takes it: products of up to 4 rows by a weight (read as stored, or transposed in place as a
// Linear layer's is) or by a batch of matrices, not 5 rows.
TEST(MatvecKernel, TheLoweringTakesItForAFewRowsByAWeight) {
  auto kernels = [](const graph::Shape& x, const graph::Shape& w, bool transposed) {
    graph::Graph g;
    graph::Value b = g.parameter("w", graph::DType::F32, w);
    g.output("y", g.matmul(g.input("x", graph::DType::F32, x), transposed ? g.transpose(b) : b));
    std::string names;
    for (const std::string& k : lowering::testing_support::kernels_of(lowering::lower(g, testing_support::h100_like_target())))
      names += k + " ";
    return names;
  };
  EXPECT_EQ(kernels({1, 1, 768}, {768, 2304}, false).rfind("matvec_", 0), 0u) << kernels({1, 1, 768}, {768, 2304}, false);
  EXPECT_EQ(kernels({4, 768}, {2304, 768}, true).rfind("matvec_", 0), 0u) << kernels({4, 768}, {2304, 768}, true);
  EXPECT_NE(kernels({4, 768}, {2304, 768}, true).find("_bt_"), std::string::npos) << "B^T read in place";
  EXPECT_EQ(kernels({5, 768}, {768, 2304}, false).find("matvec_"), std::string::npos);
  EXPECT_EQ(kernels({2, 1, 64}, {2, 64, 8}, false).rfind("matvec_", 0), 0u);
  EXPECT_EQ(kernels({2, 5, 64}, {2, 64, 8}, false).find("matvec_"), std::string::npos);
  // Attention's scores at one query, q [1, 12, 1, 64] x K^T: the keys [1, 12, 96, 64] read transposed in place, no
  // permute launched.
  graph::Graph g;
  const graph::Value keys = g.input("k", graph::DType::F32, {1, 12, 96, 64});
  g.output("s", g.matmul(g.input("q", graph::DType::F32, {1, 12, 1, 64}), g.permute(keys, {0, 1, 3, 2})));
  const std::vector<std::string> launched =
      lowering::testing_support::kernels_of(lowering::lower(g, testing_support::h100_like_target()));
  ASSERT_EQ(launched.size(), 1u) << launched.front();
  EXPECT_EQ(launched[0].rfind("matvec_m1_k64_n96_a1x12_b1x12_bt_", 0), 0u) << launched[0];
}

}  // namespace
}  // namespace matvec_test
