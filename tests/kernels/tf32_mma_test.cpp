// TF32 on tensor cores (the tf32 precision policy, base/precision.h): the tensor-core matmul and convolution
// (kernels/matmul_mma_kernel.h, conv2d_mma_kernel.h) with f32 operands, which the PTX backend multiplies as TF32
// (wmma m16n16k8, operands rounded by cvt.rna.tf32.f32). On cuda devices with cooperative matrices only: ctest runs
// these under the mock CUDA driver, whose PTX interpreter emulates the tf32 wmma (reading only the top 19 bits of each
// operand, as the tensor cores do); Vulkan has no TF32 matrices and its backend refuses such kernels by name.
//
// Operands are random f32 values; the reference is the float64 product (or the graph evaluator's convolution) of those
// same unrounded values, and each result must lie within precision_dot_bound(tf32, K) of its sum |a b|: the
// documented bound. A second test proves the operands really are rounded, to nearest with ties away from zero, and not
// left as f32 or truncated: inputs whose 11th and 12th mantissa bits matter give the TF32 answer, exactly.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <ostream>

#include "backends/ptx/ptx_backend.h"
#include "backends/spirv/spirv_backend.h"
#include "base/precision.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/graph.h"
#include "kernels/channels_last_kernel.h"
#include "kernels/conv2d_mma_kernel.h"
#include "kernels/matmul_mma_kernel.h"
#include "lowering/tunable.h"
#include "tests/backends/ptx/ptxas_runner.h"
#include "tests/kernels/compare.h"
#include "tests/kernels/device_run.h"
#include "tests/kernels/mma_tiling.h"
#include "tests/kernels/matmul_reference.h"
#include "tests/support/sweep_sample.h"

namespace tf32_mma_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;
namespace heavy = spire::lowering::heavy;

namespace {

// The devices that run TF32 fragments: PTX's (cuda:N) with cooperative matrices.
std::vector<std::string> tf32_device_ids() {
  std::vector<std::string> out;
  for (const std::string& id : device_ids_with(kir::Feature::CooperativeMatrix))
    if (id.rfind("cuda:", 0) == 0) out.push_back(id);
  return out;
}

heavy::MatmulShape tf32_shape(int64_t batch, int64_t m, int64_t k, int64_t n, bool at = false, bool bt = false) {
  heavy::MatmulShape s = batch > 1 ? heavy::matmul_shape({batch, m, k}, {batch, k, n}) : heavy::matmul_shape({m, k}, {k, n});
  s.a_transposed = at;
  s.b_transposed = bt;
  s.tf32 = true;
  return s;
}

struct Tf32Case {
  heavy::MatmulTiling tiling;
  int64_t batch, m, k, n;
  bool a_transposed = false, b_transposed = false;
};

std::string case_name(const Tf32Case& c) {
  const auto& t = c.tiling;
  return fmt::format("t{}x{}x{}_w{}x{}_s{}_{}{}x{}x{}{}{}", t.tile_m, t.tile_n, t.tile_k, t.warps_m, t.warps_n, t.stages,
                     c.batch > 1 ? fmt::format("b{}_", c.batch) : "", c.m, c.k, c.n, c.a_transposed ? "_at" : "",
                     c.b_transposed ? "_bt" : "");
}

void PrintTo(const Tf32Case& c, std::ostream* os) { *os << case_name(c); }

std::vector<Tf32Case> tf32_cases() {
  std::vector<Tf32Case> out;
  // One fragment per subgroup, a 3-stage pipeline of 16-deep slices, and the A100/H100 heuristic's 4-stage 128x128x32.
  const heavy::MatmulTiling tilings[] = {mma(32, 32, 32, 2, 2), mma(64, 64, 16, 2, 2, 3), mma(128, 128, 32, 2, 2, 4)};
  // Whole tiles, one element, and edges in every direction (K not a multiple of the slice, nor of 4: no copies).
  const int64_t shapes[][3] = {{64, 64, 64}, {1, 1, 1}, {33, 65, 70}, {40, 20, 36}};
  for (const auto& t : tilings)
    for (const auto& s : shapes) out.push_back({t, 1, s[0], s[1], s[2]});
  out.push_back({mma(64, 64, 32, 2, 2), 1, 70, 40, 90, true, false});
  out.push_back({mma(64, 64, 32, 2, 2), 1, 70, 40, 92, false, true});
  out.push_back({mma(32, 32, 32, 2, 2), 3, 33, 48, 20});
  return out;
}

using Tf32Param = std::tuple<std::string, Tf32Case>;
class MatmulTf32OnDevice : public testing::TestWithParam<Tf32Param> {};

TEST_P(MatmulTf32OnDevice, IsWithinTheTf32BoundOfTheFloat64Product) {
  const auto& [device_id, c] = GetParam();
  rt::Device& dev = device(device_id);
  const graph::Shape a_shape = c.a_transposed ? graph::Shape{c.k, c.m} : graph::Shape{c.batch, c.m, c.k};
  const graph::Shape b_shape = c.b_transposed ? graph::Shape{c.n, c.k} : graph::Shape{c.batch, c.k, c.n};
  const graph::Tensor a = random_tensor(graph::DType::F32, a_shape, 31), b = random_tensor(graph::DType::F32, b_shape, 32);
  const ReferenceProduct want = reference_product(a, b, c.batch, c.m, c.k, c.n, c.a_transposed, c.b_transposed);
  const heavy::MatmulShape s = tf32_shape(c.batch, c.m, c.k, c.n, c.a_transposed, c.b_transposed);
  int ran = 0;
  for (bool copies : {false, true}) {
    if (copies && !dev.info().features.has(kir::Feature::AsyncCopy)) continue;
    if (heavy::mma_staging(s, c.tiling, copies).shared_bytes > lowering::limits_of(dev.info()).shared_bytes) continue;
    EXPECT_EQ(run_product(dev, heavy::matmul_mma_kernel(s, c.tiling, copies), a, b, c.batch, c.m, c.n, want,
                          precision_dot_bound(Precision::Tf32, c.k)),
              "");
    ++ran;
  }
  EXPECT_GT(ran, 0) << "no variant of " << c.tiling.config().text() << " fits " << device_id;
}

INSTANTIATE_TEST_SUITE_P(AllDevices, MatmulTf32OnDevice,
                         testing::Combine(testing::ValuesIn(tf32_device_ids()), testing::ValuesIn(tf32_cases())),
                         [](const testing::TestParamInfo<Tf32Param>& p) {
                           return test_name_of(std::get<0>(p.param)) + "_" + case_name(std::get<1>(p.param));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulTf32OnDevice);

// x rounded to TF32 (10 explicit mantissa bits) to nearest, ties away from zero, as cvt.rna.tf32.f32 does; written
// here from the definition, not taken from the code under test.
double tf32_nearest_away(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  const double m = std::frexp(std::abs(x), &e);  // |x| = m 2^e, m in [0.5, 1): 11 significant bits kept
  const double kept = std::floor(m * 2048 + 0.5) / 2048;
  return std::copysign(std::ldexp(kept, e), x);
}

class Tf32Rounding : public testing::TestWithParam<std::string> {};

// A holds 1 + 2^-11, halfway between the TF32 neighbours 1 and 1 + 2^-10, and 1 + 3 2^-12 (above halfway); B holds
// ones, K = 64. Each result is then exact in f32 whatever the order of the sums: 64 (1 + 2^-10) rounded to nearest
// away (32 (1 + 2^-10) + 32 (1 + 2^-10)); 64 + 32 2^-11 + 32 3 2^-12 left as f32; 64 truncated. Only the first passes.
TEST_P(Tf32Rounding, OperandsAreRoundedToNearestAwayNotKeptOrTruncated) {
  rt::Device& dev = device(GetParam());
  const int64_t m = 32, k = 64, n = 32;
  graph::Tensor a(graph::DType::F32, {1, m, k}), b(graph::DType::F32, {1, k, n});
  for (int64_t i = 0; i < m * k; ++i) a[i] = i % 2 ? 1 + std::ldexp(1.0, -11) : 1 + 3 * std::ldexp(1.0, -12);
  for (int64_t i = 0; i < k * n; ++i) b[i] = 1;
  ReferenceProduct want{graph::Tensor(graph::DType::F64, {1, m, n}), graph::Tensor(graph::DType::F64, {1, m, n})};
  double expected = 0;
  for (int64_t q = 0; q < k; ++q) expected += tf32_nearest_away(a[q]) * tf32_nearest_away(b[q * n]);
  ASSERT_EQ(expected, 64 * (1 + std::ldexp(1.0, -10)));
  for (int64_t i = 0; i < m * n; ++i) want.product[i] = expected, want.magnitude[i] = expected;
  for (bool copies : {false, true}) {
    if (copies && !dev.info().features.has(kir::Feature::AsyncCopy)) continue;
    EXPECT_EQ(run_product(dev, heavy::matmul_mma_kernel(tf32_shape(1, m, k, n), mma(32, 32, 32, 2, 2), copies), a, b, 1,
                          m, n, want, 0.0),
              "");
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, Tf32Rounding, testing::ValuesIn(tf32_device_ids()),
                         [](const testing::TestParamInfo<std::string>& p) { return test_name_of(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Tf32Rounding);

struct ConvCase {
  std::string name;
  graph::Shape x, w;
  graph::Conv2dOptions opt;
  bool channels_last = false;
};

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

std::vector<ConvCase> conv_cases() {
  using O = graph::Conv2dOptions;
  return {{"pad1", {2, 16, 9, 11}, {24, 16, 3, 3}, O{.padding = {1, 1}}},
          {"pad1_nhwc", {2, 16, 9, 11}, {24, 16, 3, 3}, O{.padding = {1, 1}}, true},
          // 147-term windows over 3 channels (padded to 8 channels last)
          {"stem", {1, 3, 17, 15}, {16, 3, 7, 7}, O{.stride = {2, 2}, .padding = {3, 3}}},
          {"stem_nhwc", {1, 3, 17, 15}, {16, 3, 7, 7}, O{.stride = {2, 2}, .padding = {3, 3}}, true},
          {"pointwise", {3, 32, 5, 7}, {20, 32, 1, 1}, O{}},
          // 12 positions an image: the input's rows copied 4 f32 at a time (conv2d_copies_input_rows)
          {"pointwise_rows", {3, 32, 3, 4}, {20, 32, 1, 1}, O{}}};
}

using ConvParam = std::tuple<std::string, ConvCase>;
class Conv2dTf32OnDevice : public testing::TestWithParam<ConvParam> {};

// The convolution of random f32 values on tensor cores as TF32, against the graph evaluator's float64 convolution of the
// same values, within the TF32 bound of each window's sum |x w| (the evaluator on |x| and |w|).
TEST_P(Conv2dTf32OnDevice, IsWithinTheTf32BoundOfTheFloat64Convolution) {
  const auto& [device_id, c] = GetParam();
  rt::Device& dev = device(device_id);
  const heavy::Conv2dShape s = heavy::conv2d_shape(c.x, c.w, c.opt.stride, c.opt.padding, c.opt.dilation, 1);
  graph::Graph g;
  g.output("y", g.conv2d(g.input("x", graph::DType::F32, c.x), g.input("w", graph::DType::F32, c.w), c.opt));
  const std::map<std::string, graph::Tensor> in{{"x", random_tensor(graph::DType::F32, c.x, 41)},
                                                {"w", random_tensor(graph::DType::F32, c.w, 42)}};
  const graph::Tensor want = graph::evaluate(g, in, graph::DType::F64).at("y");
  const graph::Tensor magnitude = graph::evaluate(g, abs_of(in), graph::DType::F64).at("y");
  const heavy::Limits limits = lowering::limits_of(dev.info());
  const std::vector<heavy::MatmulTiling> tilings = {
      mma(32, 32, 16, 2, 2), mma(64, 128, 32, 2, 4), mma(32, 64, 32, 2, 2, 3),
      c.channels_last ? heavy::choose_conv2d_channels_last_tiling(s, kir::Type::F32, limits)
                      : heavy::choose_conv2d_mma_tiling(s, kir::Type::F32, limits)};
  for (const heavy::MatmulTiling& tl : tilings)
    for (bool copies : {false, true}) {
      if (copies && !dev.info().features.has(kir::Feature::AsyncCopy)) continue;
      graph::Graph none;
      DeviceRun run(dev, none);
      int32_t xs = run.add_slot(kir::Type::F32, in.at("x").numel(), "x");
      int32_t ws = run.add_slot(kir::Type::F32, in.at("w").numel(), "w");
      const int32_t ys = run.add_slot(kir::Type::F32, want.numel(), "y");  // poisoned by run()
      run.upload(xs, in.at("x"));
      run.upload(ws, in.at("w"));
      if (c.channels_last) {
        const int64_t depth = heavy::conv2d_channels_last_depth(s);
        auto move = [&](int32_t from, int64_t batches, int64_t positions, const char* name) {
          const int32_t to = run.add_slot(kir::Type::F32, batches * depth * positions, name);
          heavy::HeavyKernel mv = heavy::channels_last_kernel(kir::Type::F32, uint32_t(batches), uint32_t(s.cin),
                                                              uint32_t(positions), uint32_t(depth));
          run.launch(std::move(mv.kernel), {from, to}, {}, mv.groups);
          return to;
        };
        xs = move(xs, s.n, s.h * s.w, "x_nhwc");
        ws = move(ws, s.cout, s.kh * s.kw, "w_last");
      }
      heavy::HeavyKernel k = heavy::conv2d_mma_kernel(s, kir::Type::F32, tl, copies, c.channels_last);
      const std::string name = k.kernel.name;
      EXPECT_NE(name.find("tf32"), std::string::npos) << name;
      run.launch(std::move(k.kernel), {xs, ws, ys}, {}, k.groups);
      run.run();
      const graph::Tensor got = run.download(ys, graph::DType::F32, want.shape);
      EXPECT_EQ(compare(got, want, {precision_dot_bound(Precision::Tf32, s.cin * s.kh * s.kw), 0}, &magnitude), "")
          << name;
    }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, Conv2dTf32OnDevice,
                         testing::Combine(testing::ValuesIn(tf32_device_ids()), testing::ValuesIn(conv_cases())),
                         [](const testing::TestParamInfo<ConvParam>& p) {
                           return test_name_of(std::get<0>(p.param)) + "_" + std::get<1>(p.param).name;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conv2dTf32OnDevice);

// The TF32 kernels' PTX: two m16n16k8 tf32 multiplies per fragment product, every operand rounded with cvt.rna, the
// accumulators stored in the m16n16k8 shape; it assembles for sm_80 and sm_90 (a representative subset of the
// candidates unless SPIRE_FULL_SWEEPS=1), and sm_75 is refused.
TEST(Tf32MmaKernel, PtxAssemblesOnAmpereAndHopper) {
  const auto ptxas = ptx::testing::find_ptxas();
  heavy::Limits cuda;
  cuda.shared_bytes = 163 * 1024;  // an A100's opt-in limit (sm_80 PTX must fit it)
  cuda.max_invocations = 1024;
  cuda.ptx = cuda.cooperative_matrix = cuda.tf32 = true;
  int assembled = 0;
  for (bool async : {false, true}) {
    cuda.async_copy = async;
    const heavy::MatmulShape s = tf32_shape(1, 304, 200, 504);
    std::vector<kir::Kernel> kernels;
    for (const heavy::MatmulTiling& t : testing_support::sampled(heavy::matmul_mma_candidates(s, cuda)))
      kernels.push_back(heavy::matmul_mma_kernel(s, t, async).kernel);
    const heavy::Conv2dShape conv = heavy::conv2d_shape({2, 16, 9, 11}, {24, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1);
    for (bool last : {false, true})
      kernels.push_back(heavy::conv2d_mma_kernel(
          conv, kir::Type::F32,
          last ? heavy::choose_conv2d_channels_last_tiling(conv, kir::Type::F32, cuda)
               : heavy::choose_conv2d_mma_tiling(conv, kir::Type::F32, cuda),
          async, last).kernel);
    for (const kir::Kernel& k : kernels) {
      EXPECT_THROW(ptx::compile(k, ptx::Target{75}), ptx::CompileError) << k.name;
      for (uint32_t sm : {80u, 90u}) {
        const std::string text = ptx::compile(k, ptx::Target{sm});
        EXPECT_NE(text.find("m16n16k8.f32.tf32.tf32.f32"), std::string::npos) << k.name;
        EXPECT_NE(text.find("cvt.rna.tf32.f32"), std::string::npos) << k.name;
        EXPECT_NE(text.find("wmma.store.d.sync.aligned.row.m16n16k8.shared.f32"), std::string::npos) << k.name;
        EXPECT_EQ(text.find("m16n16k16"), std::string::npos) << k.name;
        if (!ptxas) continue;
        const ptx::testing::AssembleResult r = ptx::testing::assemble(*ptxas, text, sm);
        EXPECT_TRUE(r.ok) << k.name << " for sm_" << sm << ":\n" << r.log;
        ++assembled;
      }
    }
  }
  if (!ptxas) GTEST_SKIP() << "ptxas not found: the TF32 PTX was generated but not assembled";
  EXPECT_GE(assembled, 8);
}

// Vulkan's cooperative matrices have no TF32 type: the SPIR-V backend refuses the kernel by saying so (the lowering
// never offers one there: precision_policy.h).
TEST(Tf32MmaKernel, SpirvBackendRefusesTf32Fragments) {
  const kir::Kernel k = heavy::matmul_mma_kernel(tf32_shape(1, 64, 64, 64), mma(32, 32, 32, 2, 2), false).kernel;
  try {
    (void)spirv::compile(k);
    FAIL() << "a TF32 kernel compiled to SPIR-V";
  } catch (const spirv::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("TF32"), std::string::npos) << e.what();
  }
}

// TF32 operands take twice a 16-bit tile's bytes: the staging counts them so (4-byte elements, 16 bytes of padding = 4
// elements, 16-byte copies of 4), and every candidate fits the limits it was chosen under.
TEST(Tf32MmaKernel, StagingCountsFourByteOperands) {
  const heavy::MatmulShape s = tf32_shape(1, 100, 64, 200);
  const heavy::MmaStaging p = heavy::mma_staging(s, mma(64, 64, 32, 2, 2, 3), true);
  EXPECT_TRUE(p.a_copies && p.b_copies);
  // Three stages of A 64 x (32 + 4) and B 32 x (64 + 4) f32, and four subgroups' 16x16 f32 tiles.
  EXPECT_EQ(p.shared_bytes, 3u * (64 * 36 + 32 * 68) * 4 + 4 * 256 * 4);
  heavy::MatmulShape odd = tf32_shape(1, 100, 64, 202);  // B's rows (202 f32) do not start on 16 bytes
  EXPECT_FALSE(heavy::mma_staging(odd, mma(64, 64, 32, 2, 2), true).b_copies);
  heavy::Limits a100;
  a100.shared_bytes = 163 * 1024;
  a100.max_invocations = 1024;
  a100.ptx = a100.cooperative_matrix = a100.async_copy = a100.tf32 = true;
  const heavy::MatmulShape big = tf32_shape(1, 4096, 4096, 4096);
  for (const heavy::MatmulTiling& t : heavy::matmul_mma_candidates(big, a100))
    EXPECT_LE(heavy::mma_staging(big, t, true).shared_bytes, a100.shared_bytes) << t.config().text();
  EXPECT_TRUE(heavy::matmul_fits_tensor_cores(big, kir::Type::F32));
  heavy::MatmulShape mixed = big;
  mixed.a_half = kir::Type::BF16;  // TF32 is for f32 operands only
  EXPECT_FALSE(heavy::matmul_fits_tensor_cores(mixed, kir::Type::F32));
}

}  // namespace
}  // namespace tf32_mma_test
