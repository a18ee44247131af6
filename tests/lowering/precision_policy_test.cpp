// The precision policy through compile() (lowering/precision_policy.h) on every device present (ctest runs these on
// cuda:0 through the mock CUDA driver too): fp32 stays strict; tf32 gives the TF32 answer where the device has TF32
// tensor cores and the fp32 answer with a note where it has not (Vulkan); the plan records the policy; bf16 and f16
// store in half and sum in f32, within their bounds of float64 on a small CNN and visibly not fp32.
//
// The inputs make the three possible answers differ and each exact in f32: A holds 1 + 2^-11 (a tie between TF32's
// neighbours 1 and 1 + 2^-10) and 1 + 3 2^-12 by turns, B ones, K = 64. Strict f32: 64 + 32 2^-11 + 32 3 2^-12;
// TF32 (rounded to nearest, ties away): 64 (1 + 2^-10); truncated to TF32: 64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "ir/graph/evaluator.h"
#include "ir/graph/graph.h"
#include "lowering/executable.h"
#include "lowering/precision_policy.h"
#include "lowering/tunable_ops.h"
#include "runtime/device.h"
#include "tests/lowering/device_list.h"

namespace spire {
namespace precision_policy_test {  // named, not anonymous: test executables build as unity batches

constexpr int64_t kM = 32, kK = 64, kN = 32;

graph::Graph product_graph() {
  graph::Graph g;
  g.output("c", g.matmul(g.input("a", graph::DType::F32, {kM, kK}), g.input("b", graph::DType::F32, {kK, kN})));
  return g;
}

std::map<std::string, graph::Tensor> tie_inputs() {
  graph::Tensor a(graph::DType::F32, {kM, kK}), b(graph::DType::F32, {kK, kN});
  for (int64_t i = 0; i < a.numel(); ++i) a[i] = i % 2 ? 1 + std::ldexp(1.0, -11) : 1 + 3 * std::ldexp(1.0, -12);
  for (int64_t i = 0; i < b.numel(); ++i) b[i] = 1;
  return {{"a", a}, {"b", b}};
}

const double kStrict = 64 + 32 * std::ldexp(1.0, -11) + 32 * 3 * std::ldexp(1.0, -12);
const double kTf32 = 64 * (1 + std::ldexp(1.0, -10));

// Every element of the product under `p`, and what the executable noted.
std::pair<graph::Tensor, std::string> run(rt::Device& dev, Precision p, std::string* plan = nullptr) {
  auto exe = lowering::compile(product_graph(), dev, {.precision = p});
  for (const auto& [name, t] : tie_inputs()) exe->set(name, t);
  exe->step();
  if (plan) *plan = exe->plan_text();
  return {exe->get("c"), exe->precision_note()};
}

class PrecisionPolicyOnDevice : public ::testing::TestWithParam<std::string> {};

TEST_P(PrecisionPolicyOnDevice, Fp32IsStrictAndTheDefault) {
  auto dev = rt::open_device(GetParam());
  std::string plan;
  const auto [c, note] = run(*dev, Precision::Fp32, &plan);
  for (int64_t i = 0; i < c.numel(); ++i) ASSERT_EQ(c[i], kStrict) << "element " << i;
  EXPECT_EQ(note, "");
  EXPECT_NE(plan.find("precision: fp32\n"), std::string::npos) << plan;
  EXPECT_EQ(lowering::CompileOptions{}.precision, Precision::Fp32);
}

TEST_P(PrecisionPolicyOnDevice, Tf32RoundsOnTensorCoresOrSaysItRanFp32) {
  auto dev = rt::open_device(GetParam());
  std::string plan;
  const auto [c, note] = run(*dev, Precision::Tf32, &plan);
  const bool tensor_cores = lowering::has_tf32_matrices(dev->info());
  for (int64_t i = 0; i < c.numel(); ++i) ASSERT_EQ(c[i], tensor_cores ? kTf32 : kStrict) << "element " << i;
  if (tensor_cores) {
    EXPECT_EQ(note, "");
    EXPECT_NE(plan.find("precision: tf32\n"), std::string::npos) << plan;
    EXPECT_NE(plan.find("_tf32"), std::string::npos) << "no TF32 kernel in the plan:\n" << plan;
  } else {
    EXPECT_NE(note.find(GetParam()), std::string::npos) << note;
    EXPECT_NE(note.find("tf32 runs as fp32"), std::string::npos) << note;
    EXPECT_NE(plan.find("precision: tf32 (" + note + ")"), std::string::npos) << plan;
  }
}

// bf16 and f16 store the operands in half and sum in f32, and the caller feeds and reads f32. A holds 1 + 3 2^-12 (bf16
// rounds it to 1, f16 to 1 + 2^-10), B ones, K = 64; each answer is exact in its storage type: fp32 64 + 3 2^-6, bf16
// 64, f16 64 (1 + 2^-10) = 64 + 2^-4 (summing in f16 would give less: past 2, an added 2^-10 is below half an ulp).
// A device without the half type runs fp32 and says so.
TEST_P(PrecisionPolicyOnDevice, HalfPoliciesStoreInHalfAndSumInF32) {
  auto dev = rt::open_device(GetParam());
  graph::Tensor a(graph::DType::F32, {kM, kK}), b(graph::DType::F32, {kK, kN});
  for (int64_t i = 0; i < a.numel(); ++i) a[i] = 1 + 3 * std::ldexp(1.0, -12);
  for (int64_t i = 0; i < b.numel(); ++i) b[i] = 1;
  for (const auto& [p, half_answer, type] : {std::tuple{Precision::Bf16, 64.0, "bf16"},
                                             std::tuple{Precision::F16, 64 + std::ldexp(1.0, -4), "f16"}}) {
    SCOPED_TRACE(precision_name(p));
    auto exe = lowering::compile(product_graph(), *dev, {.precision = p});
    exe->set("a", a);
    exe->set("b", b);
    exe->step();
    const graph::Tensor c = exe->get("c");
    EXPECT_EQ(c.dtype, graph::DType::F32);
    const std::string plan = exe->plan_text();
    if (!lowering::has_half_storage(dev->info(), p)) {
      for (int64_t i = 0; i < c.numel(); ++i) ASSERT_EQ(c[i], 64 + 3 * std::ldexp(1.0, -6)) << "element " << i;
      EXPECT_NE(exe->precision_note().find("runs as fp32"), std::string::npos) << exe->precision_note();
      continue;
    }
    for (int64_t i = 0; i < c.numel(); ++i) ASSERT_EQ(c[i], half_answer) << "element " << i;
    EXPECT_EQ(exe->precision_note(), "");
    EXPECT_NE(plan.find(fmt::format("precision: {}\n", precision_name(p))), std::string::npos) << plan;
    EXPECT_NE(plan.find(fmt::format(" {} x ", type)), std::string::npos) << "no " << type << " buffer in the plan:\n"
                                                                         << plan;
  }
}

// Under bf16 and f16 a weight only the product reads is stored in half alone (passes/half_storage.h's
// parameters_in_half): the plan's weights take half f32's bytes, set() still takes f32 and rounds each value to half
// on upload (get() shows the rounded values), raw f32 bytes are refused by their size, and the product equals float64
// on the rounded weights within f32 sums' error.
TEST_P(PrecisionPolicyOnDevice, HalfPoliciesStoreAWeightInHalfOnly) {
  auto dev = rt::open_device(GetParam());
  graph::Graph g;
  g.output("c", g.matmul(g.input("a", graph::DType::F32, {kM, kK}), g.parameter("w", graph::DType::F32, {kK, kN})));
  graph::Tensor a(graph::DType::F32, {kM, kK}), w(graph::DType::F32, {kK, kN});
  for (int64_t i = 0; i < a.numel(); ++i) a[i] = double(i % 7) - 3;  // exact in half
  uint32_t state = 99;
  for (int64_t i = 0; i < w.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    w[i] = float(double(state >> 8) / double(1u << 24) - 0.5);  // f32 values half must round
  }
  EXPECT_EQ(lowering::compile(g, *dev)->memory().weights, uint64_t(kK * kN * 4));
  for (Precision p : {Precision::Bf16, Precision::F16}) {
    SCOPED_TRACE(precision_name(p));
    if (!lowering::has_half_storage(dev->info(), p)) continue;  // runs as fp32 (HalfPoliciesStoreInHalfAndSumInF32)
    const graph::DType half = p == Precision::Bf16 ? graph::DType::BF16 : graph::DType::F16;
    auto exe = lowering::compile(g, *dev, {.precision = p});
    EXPECT_EQ(exe->memory().weights, uint64_t(kK * kN * 2)) << "an f32 copy beside the half one?";
    exe->set("a", a);
    exe->set("w", w);
    const graph::Tensor stored = exe->get("w");
    EXPECT_EQ(stored.dtype, graph::DType::F32);
    graph::Tensor rounded = w;
    rounded.dtype = half;
    rounded.round_to_dtype();
    rounded.dtype = graph::DType::F32;
    int64_t changed = 0;
    for (int64_t i = 0; i < w.numel(); ++i) {
      ASSERT_EQ(stored[i], rounded[i]) << "element " << i;
      changed += rounded[i] != w[i];
    }
    EXPECT_GT(changed, w.numel() / 2) << "the weights were exact in half: the test shows nothing";
    try {
      std::vector<float> raw(size_t(w.numel()));
      exe->set_raw("w", raw.data(), raw.size() * sizeof(float));
      ADD_FAILURE() << "f32 bytes taken for a half weight";
    } catch (const graph::GraphError& e) {
      EXPECT_NE(std::string(e.what()).find("bytes"), std::string::npos) << e.what();
    }
    exe->step();
    const graph::Tensor c = exe->get("c");
    const graph::Tensor want = graph::evaluate(g, {{"a", a}, {"w", rounded}}, graph::DType::F64).at("c");
    // c itself is stored in half: its rounding (half an ulp, at most 2^-8 of it in bf16, 2^-11 in f16) plus f32 sums'
    // error.
    const double ulp = std::ldexp(1.0, p == Precision::Bf16 ? -7 : -10);
    for (int64_t i = 0; i < c.numel(); ++i)
      ASSERT_NEAR(c[i], want[i], 0.5 * ulp * std::abs(want[i]) + 1e-5 * kK) << "element " << i;
  }
}

// A small CNN (two 3x3 convolutions over 8 and 16 channels of a 96x96 image, ReLUs, a global mean, a linear layer):
// enough output positions that the tensor-core convolution is the heuristic (channels last, 72 blocks), so under tf32
// on cuda:0 both convolutions and the product run as TF32. Against the float64 evaluator: within 2e-3 of the largest
// output (a network's error is several layers' dot products, each within docs/PRECISION.md's bound, about 1e-3 of its
// sum |a b| here), and not the fp32 answer (which is within 1e-4). On a device without TF32 matrices, fp32's bits.
TEST_P(PrecisionPolicyOnDevice, SmallCnnUnderTf32IsWithinItsBoundOfFloat64) {
  auto dev = rt::open_device(GetParam());
  graph::Graph g;
  using O = graph::Conv2dOptions;
  graph::Value x = g.input("x", graph::DType::F32, {1, 8, 96, 96});
  graph::Value h = g.relu(g.conv2d(x, g.input("w1", graph::DType::F32, {16, 8, 3, 3}), O{.padding = {1, 1}}));
  h = g.relu(g.conv2d(h, g.input("w2", graph::DType::F32, {16, 16, 3, 3}), O{.padding = {1, 1}}));
  g.output("y", g.matmul(g.mean(h, {2, 3}), g.input("fc", graph::DType::F32, {16, 10})));
  std::map<std::string, graph::Tensor> in;
  uint32_t state = 12345;
  auto uniform = [&] {  // a fixed LCG: inputs the same everywhere
    state = state * 1664525u + 1013904223u;
    return double(state >> 8) / double(1u << 24) * 2 - 1;
  };
  for (const auto& [name, shape] : std::map<std::string, graph::Shape>{
           {"x", {1, 8, 96, 96}}, {"w1", {16, 8, 3, 3}}, {"w2", {16, 16, 3, 3}}, {"fc", {16, 10}}}) {
    graph::Tensor t(graph::DType::F32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = float(uniform());
    in[name] = t;
  }
  const graph::Tensor want = graph::evaluate(g, in, graph::DType::F64).at("y");
  double scale = 1;
  for (double v : want.data) scale = std::max(scale, std::abs(v));
  auto error_of = [&](Precision p, std::string* plan) {
    auto exe = lowering::compile(g, *dev, {.precision = p});
    for (const auto& [name, t] : in) exe->set(name, t);
    exe->step();
    *plan = exe->plan_text();
    const graph::Tensor got = exe->get("y");
    double worst = 0;
    for (int64_t i = 0; i < got.numel(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    return std::pair{worst / scale, got};
  };
  std::string fp32_plan, tf32_plan;
  const auto [fp32_error, fp32] = error_of(Precision::Fp32, &fp32_plan);
  const auto [tf32_error, tf32] = error_of(Precision::Tf32, &tf32_plan);
  EXPECT_LE(fp32_error, 1e-4);  // (the f32 path may take Winograd for these 3x3 layers)
  if (!lowering::has_tf32_matrices(dev->info())) {
    EXPECT_EQ(tf32.data, fp32.data);
    return;
  }
  EXPECT_LE(tf32_error, 2e-3);
  EXPECT_NE(tf32.data, fp32.data) << "tf32 gave fp32's bits: were its operands rounded?";
  size_t tf32_convolutions = 0;
  for (size_t at = tf32_plan.find("conv2d_"); at != std::string::npos; at = tf32_plan.find("conv2d_", at + 1)) {
    const size_t end = tf32_plan.find_first_of(" \n", at);
    if (tf32_plan.substr(at, end - at).find("_tf32") != std::string::npos) ++tf32_convolutions;
  }
  EXPECT_GE(tf32_convolutions, 2u) << tf32_plan;
  EXPECT_EQ(fp32_plan.find("tf32"), std::string::npos) << fp32_plan;
}

// A 1x1 layer at stride 1 (16 -> 128 channels over two 64x64 images: 64 blocks, so tensor cores pay) under tf32: the
// tensor-core convolution copying its input's rows (conv2d_mma_kernel.h), as TF32. Against the float64 evaluator: each
// output within precision_dot_bound(tf32, 16) of its sum |x w|, and not fp32's bits; on a device without TF32
// matrices, fp32's bits.
TEST_P(PrecisionPolicyOnDevice, PointwiseConvolutionUnderTf32IsWithinItsBound) {
  auto dev = rt::open_device(GetParam());
  graph::Graph g;
  const graph::Shape xs{2, 16, 64, 64}, ws{128, 16, 1, 1};
  g.output("y", g.conv2d(g.input("x", graph::DType::F32, xs), g.input("w", graph::DType::F32, ws)));
  std::map<std::string, graph::Tensor> in;
  uint32_t state = 4242;
  auto uniform = [&] {  // a fixed LCG: inputs the same everywhere
    state = state * 1664525u + 1013904223u;
    return double(state >> 8) / double(1u << 24) * 2 - 1;
  };
  for (const auto& [name, shape] : std::map<std::string, graph::Shape>{{"x", xs}, {"w", ws}}) {
    graph::Tensor t(graph::DType::F32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = float(uniform());
    in[name] = t;
  }
  const graph::Tensor want = graph::evaluate(g, in, graph::DType::F64).at("y");
  auto run_under = [&](Precision p, std::string* plan) {
    auto exe = lowering::compile(g, *dev, {.precision = p});
    for (const auto& [name, t] : in) exe->set(name, t);
    exe->step();
    *plan = exe->plan_text();
    return exe->get("y");
  };
  std::string fp32_plan, tf32_plan;
  const graph::Tensor fp32 = run_under(Precision::Fp32, &fp32_plan);
  const graph::Tensor tf32 = run_under(Precision::Tf32, &tf32_plan);
  if (!lowering::has_tf32_matrices(dev->info())) {
    EXPECT_EQ(tf32.data, fp32.data);
    return;
  }
  // Each output's bound from its own window: sum over the 16 channels of |x w|.
  const int64_t positions = xs[2] * xs[3];
  for (int64_t i = 0; i < want.numel(); ++i) {
    const int64_t n = i / (ws[0] * positions), co = i / positions % ws[0], p = i % positions;
    double magnitude = 0;
    for (int64_t ci = 0; ci < xs[1]; ++ci)
      magnitude += std::abs(double(in.at("x")[(n * xs[1] + ci) * positions + p]) * double(in.at("w")[co * xs[1] + ci]));
    ASSERT_LE(std::abs(tf32[i] - want[i]), precision_dot_bound(Precision::Tf32, xs[1]) * magnitude) << "element " << i;
  }
  EXPECT_NE(tf32.data, fp32.data) << "tf32 gave fp32's bits: were its operands rounded?";
  EXPECT_NE(tf32_plan.find("conv2d_n2_c16_h64_w64_k128_r1x1_s1x1_p0x0_d1x1_g1_tf32_t"), std::string::npos) << tf32_plan;
  EXPECT_EQ(fp32_plan.find("tf32"), std::string::npos) << fp32_plan;
}

// The small CNN above with a softmax after its linear layer (torch.autocast's f32 op), under bf16 and f16 against the
// float64 evaluator. The documented bound of a network (docs/PRECISION.md): its L product layers each within the dot
// product's bound precision_dot_bound(p, K) of their sum |a b|, ReLUs and means adding nothing, so the logits within
// L precision_dot_bound(p, K_max) of their largest magnitude (L = 3, K_max = 144 here: 3.5e-2 under bf16, 4.4e-3 under
// f16). Softmax runs in f32 on the f32 logits; its Jacobian's max-norm is at most 1/2, so the probabilities are off by
// at most half the logits' largest error. And not silently fp32: the error is larger than fp32's, and the plan has
// half buffers.
TEST_P(PrecisionPolicyOnDevice, SmallCnnUnderBf16AndF16IsWithinItsBoundOfFloat64) {
  auto dev = rt::open_device(GetParam());
  graph::Graph g;
  using O = graph::Conv2dOptions;
  graph::Value x = g.input("x", graph::DType::F32, {1, 8, 32, 32});
  graph::Value h = g.relu(g.conv2d(x, g.parameter("w1", graph::DType::F32, {16, 8, 3, 3}), O{.padding = {1, 1}}));
  h = g.relu(g.conv2d(h, g.parameter("w2", graph::DType::F32, {16, 16, 3, 3}), O{.padding = {1, 1}}));
  graph::Value logits = g.matmul(g.mean(h, {2, 3}), g.parameter("fc", graph::DType::F32, {16, 10}));
  g.output("logits", logits);
  g.output("p", g.op("softmax", {logits}, {{"axis", int64_t(1)}}));
  std::map<std::string, graph::Tensor> in;
  uint32_t state = 777;
  auto uniform = [&] {  // a fixed LCG: inputs the same everywhere
    state = state * 1664525u + 1013904223u;
    return double(state >> 8) / double(1u << 24) * 2 - 1;
  };
  for (const auto& [name, shape] : std::map<std::string, graph::Shape>{
           {"x", {1, 8, 32, 32}}, {"w1", {16, 8, 3, 3}}, {"w2", {16, 16, 3, 3}}, {"fc", {16, 10}}}) {
    graph::Tensor t(graph::DType::F32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = float(uniform() * (name == "x" ? 1 : 0.5));
    in[name] = t;
  }
  const auto want = graph::evaluate(g, in, graph::DType::F64);
  // The largest absolute error of `output` under `p`, and the largest magnitude of its reference.
  auto error_of = [&](Precision p, const std::string& output, std::string* plan) {
    auto exe = lowering::compile(g, *dev, {.precision = p});
    for (const auto& [name, t] : in) exe->set(name, t);
    exe->step();
    if (plan) *plan = exe->plan_text();
    const graph::Tensor got = exe->get(output);
    EXPECT_EQ(got.dtype, graph::DType::F32);
    double worst = 0, scale = 1e-30;
    for (int64_t i = 0; i < got.numel(); ++i) {
      worst = std::max(worst, std::abs(got[i] - want.at(output)[i]));
      scale = std::max(scale, std::abs(want.at(output)[i]));
    }
    return std::pair{worst, scale};
  };
  const auto [fp32_abs, scale] = error_of(Precision::Fp32, "logits", nullptr);
  const double fp32_error = fp32_abs / scale;
  EXPECT_LE(fp32_error, 1e-5);
  for (Precision p : {Precision::Bf16, Precision::F16}) {
    SCOPED_TRACE(precision_name(p));
    if (!lowering::has_half_storage(dev->info(), p)) continue;  // runs as fp32 (HalfPoliciesStoreInHalfAndSumInF32)
    const double bound = 3 * precision_dot_bound(p, 144);
    std::string plan;
    const double logits_error = error_of(p, "logits", &plan).first / scale;
    const double p_error = error_of(p, "p", nullptr).first;
    std::printf("%s on %s: logits off by %.3g of their scale (bound %.3g; fp32 %.3g), probabilities by %.3g\n",
                std::string(precision_name(p)).c_str(), GetParam().c_str(), logits_error, bound, fp32_error, p_error);
    EXPECT_LE(logits_error, bound);
    EXPECT_LE(p_error, 0.5 * logits_error * scale + 1e-6);
    EXPECT_GT(logits_error, 10 * fp32_error) << "as accurate as fp32: was anything stored in half?";
    const std::string type = p == Precision::Bf16 ? "bf16" : "f16";
    EXPECT_NE(plan.find(fmt::format(" {} x ", type)), std::string::npos) << plan;
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, PrecisionPolicyOnDevice,
                         ::testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return lowering::testing_support::test_name(p.param);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PrecisionPolicyOnDevice);

// Which devices multiply TF32 (from their descriptions alone: no device needed), and the note for the others.
TEST(PrecisionPolicy, OnlyCudaWithCooperativeMatricesHasTf32) {
  rt::DeviceInfo cuda;
  cuda.id = "cuda:0";
  cuda.backend = rt::Backend::Cuda;
  cuda.compute_capability = 90;
  cuda.subgroup_size = 32;
  cuda.features = Features(Feature::CooperativeMatrix);
  EXPECT_TRUE(lowering::has_tf32_matrices(cuda));
  EXPECT_EQ(lowering::precision_note(cuda, Precision::Tf32), "");
  rt::DeviceInfo turing = cuda;
  turing.compute_capability = 75;
  turing.features = {};
  EXPECT_FALSE(lowering::has_tf32_matrices(turing));
  rt::DeviceInfo vulkan = cuda;
  vulkan.id = "vulkan:0";
  vulkan.backend = rt::Backend::Vulkan;
  vulkan.compute_capability = 0;
  EXPECT_FALSE(lowering::has_tf32_matrices(vulkan));
  EXPECT_EQ(lowering::precision_note(vulkan, Precision::Tf32), "vulkan:0 has no TF32 cooperative matrices; tf32 runs as fp32");
  EXPECT_EQ(lowering::precision_note(vulkan, Precision::Fp32), "");
  lowering::heavy::Limits limits;
  limits.cooperative_matrix = limits.ptx = true;
  EXPECT_TRUE(lowering::limits_under(limits, cuda, Precision::Tf32).tf32);
  EXPECT_FALSE(lowering::limits_under(limits, cuda, Precision::Fp32).tf32);
  EXPECT_FALSE(lowering::limits_under(limits, vulkan, Precision::Tf32).tf32);
}

// Which devices store each half type (from their descriptions alone), the note for the others, and the graph lowering
// runs: rewritten where the device has the type, the model as given (fp32) where it has not.
TEST(PrecisionPolicy, HalfPoliciesNeedTheHalfTypeOrRunFp32SayingSo) {
  rt::DeviceInfo vulkan;
  vulkan.id = "vulkan:0";
  vulkan.backend = rt::Backend::Vulkan;
  vulkan.features = Features(Feature::Float16);
  EXPECT_FALSE(lowering::has_half_storage(vulkan, Precision::Bf16));
  EXPECT_TRUE(lowering::has_half_storage(vulkan, Precision::F16));
  EXPECT_FALSE(lowering::has_half_storage(vulkan, Precision::Fp32));
  EXPECT_EQ(lowering::precision_note(vulkan, Precision::Bf16), "vulkan:0 has no bfloat16 storage; bf16 runs as fp32");
  EXPECT_EQ(lowering::precision_note(vulkan, Precision::F16), "");
  const graph::Graph g = product_graph();
  EXPECT_EQ(lowering::graph_under(g, vulkan, Precision::Bf16).size(), g.size());  // as given
  const graph::Graph f16 = lowering::graph_under(g, vulkan, Precision::F16);
  EXPECT_EQ(f16.type(f16.at("a")).dtype, graph::DType::F32);  // the caller's f32 input
  const graph::Value out = f16.outputs()[0].value;  // the product, stored in f16, cast back up for the caller
  EXPECT_EQ(f16.type(out).dtype, graph::DType::F32);
  ASSERT_EQ(f16.node(out).op, graph::OpKind::Cast);
  EXPECT_EQ(f16.node(f16.node(out).inputs[0]).op, graph::OpKind::Matmul);
  EXPECT_EQ(f16.type(f16.node(out).inputs[0]).dtype, graph::DType::F16);
}

// --tune under tf32 times what tf32 compiles: the product's key says _tf32 (its own cache entry) and its candidates are
// tensor-core tilings, the heuristic first; under fp32 the same graph's key and configs are the f32 SIMT kernel's.
// An sm_90 GPU's description (no device needed): TF32 tensor cores, 227 KB of workgroup memory.
rt::DeviceInfo hopper_like() {
  rt::DeviceInfo cuda;
  cuda.id = "cuda:0";
  cuda.backend = rt::Backend::Cuda;
  cuda.compute_capability = 90;
  cuda.subgroup_size = 32;
  cuda.shared_memory_bytes = 227 * 1024;
  cuda.max_workgroup_invocations = 1024;
  cuda.features = Features(Feature::CooperativeMatrix) | Feature::AsyncCopy;
  return cuda;
}

TEST(PrecisionPolicy, TheTunerSeesTheTf32Products) {
  const rt::DeviceInfo cuda = hopper_like();
  const auto tf32 = lowering::tunable_ops(product_graph(), cuda, Precision::Tf32);
  const auto fp32 = lowering::tunable_ops(product_graph(), cuda, Precision::Fp32);
  ASSERT_EQ(tf32.size(), 1u);
  ASSERT_EQ(fp32.size(), 1u);
  EXPECT_NE(tf32[0].key.shape.find("_tf32"), std::string::npos) << tf32[0].key.text();
  EXPECT_EQ(fp32[0].key.shape.find("tf32"), std::string::npos) << fp32[0].key.text();
  EXPECT_TRUE(tf32[0].heuristic.has("warps_m")) << tf32[0].heuristic.text();
  EXPECT_FALSE(fp32[0].heuristic.has("warps_m")) << fp32[0].heuristic.text();
}

// A 3x3 stride-1 convolution to 64 channels (resnet's) under tf32 keeps Winograd's f32 heuristic: TF32 on wmma
// multiplies at half bf16's rate, and its implicit GEMM took 0.12-0.14 ms a resnet18 layer at batch 32 on the H200
// against Winograd's 0.072 (lower_conv2d.cpp, tensor_cores_pay). The TF32 tilings stay offered to the tuner. A 1x1
// convolution, which Winograd cannot take, and a 3x3 one to 32 channels (densenet121's, slower by Winograd) go to the
// tensor cores.
TEST(PrecisionPolicy, Tf32Keeps3x3ConvolutionsOnWinograd) {
  const rt::DeviceInfo cuda = hopper_like();
  using O = graph::Conv2dOptions;
  for (const auto& [k, cout] : {std::pair<int64_t, int64_t>{3, 64}, {1, 64}, {3, 32}}) {
    graph::Graph g;
    graph::Value x = g.input("x", graph::DType::F32, {32, 128, 56, 56});
    g.output("y", g.conv2d(x, g.input("w", graph::DType::F32, {cout, 128, k, k}), O{.padding = {k / 2, k / 2}}));
    const auto ops = lowering::tunable_ops(g, cuda, Precision::Tf32);
    ASSERT_EQ(ops.size(), 1u);
    const bool offers_tf32 = std::any_of(ops[0].candidates.begin(), ops[0].candidates.end(),
                                         [](const lowering::heavy::Config& c) { return c.has("warps_m"); });
    EXPECT_TRUE(offers_tf32) << k << "x" << k << " to " << cout;
    if (k == 3 && cout == 64)
      EXPECT_TRUE(ops[0].heuristic.has("winograd")) << ops[0].heuristic.text();
    else
      EXPECT_TRUE(ops[0].heuristic.has("warps_m")) << k << "x" << k << " to " << cout << ": " << ops[0].heuristic.text();
  }
}

}  // namespace precision_policy_test
}  // namespace spire
