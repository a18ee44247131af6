// Convolutions of f16/bf16 inputs and weights. compute_in_f32 casts both up; fusion absorbs those casts (fuse.h), so
// the convolution reads the 16-bit values in place: on a device with tensor cores through the implicit GEMM on them
// (kernels/conv2d_mma_kernel.h), with no cast launch at all; elsewhere its own program widens them
// first, the launches the casts had before. A layer (convolution, bias, ReLU, rounded to half) against the float64
// evaluator on every device, with the op harness's half tolerance (lowering/heavy kernel tests check the products
// themselves to f32 accuracy: tests/kernels/conv2d_mma_test.cpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "ir/graph/evaluator.h"
#include "ir/graph/op_table.h"
#include "lowering/executable.h"
#include "lowering/plan.h"
#include "op_harness/op_harness.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/lowering/device_list.h"
#include "tests/lowering/plan_queries.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/random_tensor.h"

namespace half_conv2d_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Graph;

namespace {

// relu(conv2d(x, w) + b), every value of dtype `h`.
Graph half_conv_layer(DType h, const graph::Shape& x_shape, const graph::Shape& w_shape, graph::Conv2dOptions o) {
  Graph g;
  auto x = g.input("x", h, x_shape);
  auto w = g.parameter("w", h, w_shape);
  auto b = g.parameter("b", h, {w_shape[0]});
  auto conv = g.name(g.conv2d(x, w, o), "conv");
  g.output("y", g.name(g.relu(g.add(conv, g.reshape(b, {1, w_shape[0], 1, 1}))), "y"));
  return g;
}

// Operands that the plan's f32 kernels read as stored, converting each element they load: each such kernel's name
// carries "_reads_<dtype>" once per operand it reads so.
int operands_read_in_place(const std::vector<std::string>& names, std::string_view dtype) {
  const std::string mark = fmt::format("_reads_{}", dtype);
  int n = 0;
  for (const std::string& k : names)
    for (size_t at = k.find(mark); at != std::string::npos; at = k.find(mark, at + 1))
      if (k.compare(at + mark.size(), 1, "_") == 0 || at + mark.size() == k.size()) ++n;
  return n;
}

rt::DeviceInfo with_tensor_cores(rt::DeviceInfo d) {
  d.features = d.features | kir::Feature::CooperativeMatrix | kir::Feature::BFloat16 | kir::Feature::AsyncCopy;
  return d;
}

TEST(HalfConv2d, ReadsItsOperandsInPlaceOnTensorCoresAndWidensThemElsewhere) {
  using lowering::testing_support::kernels_of;
  // resnet18's layer2.0.conv1 at batch 16 (3x3 at stride 2, 98 blocks of 128x128).
  const Graph g = half_conv_layer(DType::BF16, {16, 64, 56, 56}, {128, 64, 3, 3}, {.stride = {2, 2}, .padding = {1, 1}});
  // Tensor cores: the convolution reads bf16 with the bias, ReLU and rounding in its stores (the bias's cast up too:
  // the epilogue converts each bias element it reads, fuse.h). 64 input channels: channels last, the input and the
  // weights moved first by the convolution's own program.
  const rt::DeviceInfo tc_target = with_tensor_cores(testing_support::h100_like_target());
  const auto tc = kernels_of(lowering::lower(g, tc_target));
  ASSERT_EQ(tc.size(), 3u) << ::testing::PrintToString(tc);
  EXPECT_EQ(tc[0], "channels_last_bf16_b16_c64_p3136");
  EXPECT_EQ(tc[1], "channels_last_bf16_b128_c64_p9");
  EXPECT_EQ(tc[2].rfind("conv2d_n16_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1_bf16_nhwc_t", 0), 0u) << tc[2];
  EXPECT_NE(tc[2].find("_mma_f32_cast_relu"), std::string::npos) << tc[2];
  // 3 input channels (a 16-byte piece would straddle pixels): the input gathered as stored, no moves.
  const Graph stem = half_conv_layer(DType::BF16, {16, 3, 224, 224}, {64, 3, 7, 7}, {.stride = {2, 2}, .padding = {3, 3}});
  const auto st = kernels_of(lowering::lower(stem, tc_target));
  ASSERT_EQ(st.size(), 1u) << ::testing::PrintToString(st);
  EXPECT_EQ(st[0].rfind("conv2d_n16_c3_h224_w224_k64_r7x7_s2x2_p3x3_d1x1_g1_bf16_t", 0), 0u) << st[0];
  // Without them: the f32 kernel reads the bf16 input as stored, converting each element it loads; the weights, which
  // it reads in vectors, are widened first by the convolution's program (a launch reading only a parameter, run once:
  // parameter_launches.h). The same epilogue in its stores.
  const lowering::Plan simt_plan = lowering::lower(g, testing_support::h100_like_target());
  const auto simt = kernels_of(simt_plan);
  ASSERT_EQ(simt.size(), 2u) << ::testing::PrintToString(simt);
  EXPECT_EQ(simt[0], "widen_bf16_73728");
  EXPECT_TRUE(simt_plan.launches[0].parameters_only);
  EXPECT_EQ(simt[1].find("_mma"), std::string::npos) << simt[1];
  EXPECT_NE(simt[1].find("_reads_bf16_cast_relu"), std::string::npos) << simt[1];
  // A 1x1 layer reads its input as stored (the move would pass over four times what a stride of 2 reads).
  const auto pointwise = kernels_of(lowering::lower(
      half_conv_layer(DType::BF16, {16, 64, 56, 56}, {128, 64, 1, 1}, {.stride = {2, 2}}), tc_target));
  EXPECT_EQ(lowering::testing_support::count_prefix(pointwise, "channels_last_"), 0) << ::testing::PrintToString(pointwise);
  // At stride 1 a 1x1 layer over 56x56 images copies its input's rows as stored (conv2d_mma_kernel.h), 2 stages deep
  // in this target's 48 KiB: one launch with the bias, ReLU and rounding in its stores.
  const auto pr = kernels_of(lowering::lower(half_conv_layer(DType::BF16, {16, 64, 56, 56}, {128, 64, 1, 1}, {}), tc_target));
  ASSERT_EQ(pr.size(), 1u) << ::testing::PrintToString(pr);
  EXPECT_EQ(pr[0].rfind("conv2d_n16_c64_h56_w56_k128_r1x1_s1x1_p0x0_d1x1_g1_bf16_t", 0), 0u) << pr[0];
  EXPECT_NE(pr[0].find("_c2_"), std::string::npos) << pr[0];
  EXPECT_NE(pr[0].find("_mma_f32_cast_relu"), std::string::npos) << pr[0];
  // With them, but where they do not pay: layer2.0.conv1 at batch 1 (7 blocks) widens and runs f32 too.
  auto on_tensor_cores = [](const Graph& g, const rt::DeviceInfo& target) {
    const auto names = kernels_of(lowering::lower(g, target));
    const int widened = lowering::testing_support::count_prefix(names, "widen_bf16");
    const auto mma = std::count_if(names.begin(), names.end(), [](const std::string& k) { return k.find("_mma") != k.npos; });
    // f32 kernels: each operand widened or read as stored
    const bool f32 = mma == 0 && widened + operands_read_in_place(names, "bf16") == 2;
    EXPECT_TRUE(f32 || (widened == 0 && mma == 1)) << ::testing::PrintToString(names);
    return mma == 1;
  };
  EXPECT_FALSE(on_tensor_cores(
      half_conv_layer(DType::BF16, {1, 64, 56, 56}, {128, 64, 3, 3}, {.stride = {2, 2}, .padding = {1, 1}}), tc_target));
  // 3x3 layers at stride 1 (Winograd's in f32) take them channels last, whatever the workgroup memory; as stored (36
  // input channels) only with 128 or more output channels where it is 48 KiB (NVIDIA's Vulkan, as this target), not
  // where it is CUDA's 227 KiB.
  rt::DeviceInfo large_shared = tc_target;
  large_shared.shared_memory_bytes = 232448;
  const Graph narrow = half_conv_layer(DType::BF16, {16, 64, 56, 56}, {64, 64, 3, 3}, {.padding = {1, 1}});
  EXPECT_TRUE(on_tensor_cores(narrow, tc_target));
  EXPECT_TRUE(on_tensor_cores(narrow, large_shared));
  const Graph stored = half_conv_layer(DType::BF16, {16, 36, 28, 28}, {128, 36, 3, 3}, {.padding = {1, 1}});
  EXPECT_TRUE(on_tensor_cores(stored, tc_target));
  EXPECT_FALSE(on_tensor_cores(stored, large_shared));
  // Mixed operands (an f32 weight) keep f32 products: only the input is widened.
  Graph mixed;
  auto x = mixed.input("x", DType::F16, {8, 64, 28, 28});
  auto w = mixed.parameter("w", DType::F32, {128, 64, 3, 3});
  mixed.output("y", mixed.conv2d(mixed.cast(x, DType::F32), w, {.padding = {1, 1}}));
  const auto m = kernels_of(lowering::lower(mixed, with_tensor_cores(testing_support::h100_like_target())));
  ASSERT_GE(m.size(), 1u) << ::testing::PrintToString(m);
  EXPECT_EQ(lowering::testing_support::count_prefix(m, "widen_") + operands_read_in_place(m, "f16"), 1)
      << ::testing::PrintToString(m);
  for (const std::string& k : m) EXPECT_EQ(k.find("_mma"), std::string::npos) << k;
}

// How a 1x1 layer on tensor cores reads its input (lower_conv2d.cpp's channels_last_pays): copying its rows where
// the images come in whole 16-byte pieces; else moved to channels last first where the gather would be repeated for 2
// or more block rows of output channels (8 strided); else gathered. Shapes of resnet50 at batch 32.
TEST(HalfConv2d, PointwiseLayersReadTheirInputAsItPays) {
  using lowering::testing_support::kernels_of;
  rt::DeviceInfo cuda = with_tensor_cores(testing_support::h100_like_target());
  cuda.shared_memory_bytes = 232448;
  auto kernels = [&](const graph::Shape& x, const graph::Shape& w, graph::Conv2dOptions o) {
    return kernels_of(lowering::lower(half_conv_layer(DType::BF16, x, w, o), cuda));
  };
  // 56x56 images: rows copied, one launch.
  const auto rows = kernels({32, 64, 56, 56}, {256, 64, 1, 1}, {});
  ASSERT_EQ(rows.size(), 1u) << ::testing::PrintToString(rows);
  EXPECT_EQ(rows[0].find("_c1_"), std::string::npos) << rows[0];
  // 14x14 (196 positions, not whole pieces of 8) into 1024 channels: the input moved (1x1 weights with channels in 8s
  // need no move), then the convolution channels last.
  const auto moved = kernels({32, 256, 14, 14}, {1024, 256, 1, 1}, {});
  ASSERT_EQ(moved.size(), 2u) << ::testing::PrintToString(moved);
  EXPECT_EQ(moved[0], "channels_last_bf16_b32_c256_p196");
  EXPECT_NE(moved[1].find("_nhwc_"), std::string::npos) << moved[1];
  // Into 128 channels (one block row; at batch 64, for 64 blocks): gathered as stored.
  const auto gathered = kernels({64, 256, 14, 14}, {128, 256, 1, 1}, {});
  ASSERT_EQ(gathered.size(), 1u) << ::testing::PrintToString(gathered);
  EXPECT_NE(gathered[0].find("_c1_"), std::string::npos) << gathered[0];
  // Strided: moved into 1024 channels, gathered into 512.
  EXPECT_EQ(lowering::testing_support::count_prefix(kernels({32, 512, 28, 28}, {1024, 512, 1, 1}, {.stride = {2, 2}}),
                                                    "channels_last_"), 1);
  EXPECT_EQ(lowering::testing_support::count_prefix(kernels({32, 256, 56, 56}, {512, 256, 1, 1}, {.stride = {2, 2}}),
                                                    "channels_last_"), 0);
  // 2048 -> 512 channels over 7x7 images: 52 blocks, each summing 2048 terms, on tensor cores (fewer than the 64 blocks
  // shorter windows need); at batch 1 (4 blocks) the f32 kernels.
  auto on_tensor_cores = [](const std::vector<std::string>& names) {
    return std::any_of(names.begin(), names.end(), [](const std::string& k) { return k.find("_mma") != k.npos; });
  };
  EXPECT_TRUE(on_tensor_cores(kernels({32, 2048, 7, 7}, {512, 2048, 1, 1}, {})));
  EXPECT_FALSE(on_tensor_cores(kernels({1, 2048, 7, 7}, {512, 2048, 1, 1}, {})));
}

// A residual block's convolution: its input is also read by the block's add. The convolution still reads it as stored
// (compute_in_f32 gives it a cast up of its own, which fusion absorbs), on tensor cores, with no f32 copy of x.
TEST(HalfConv2d, ReadsAResidualInputInPlaceToo) {
  using lowering::testing_support::kernels_of;
  Graph g;
  auto x = g.input("x", DType::F16, {16, 64, 56, 56});
  auto w = g.parameter("w", DType::F16, {64, 64, 3, 3});
  g.output("y", g.name(g.relu(g.add(g.conv2d(x, w, {.padding = {1, 1}}), x)), "y"));
  const auto names = kernels_of(lowering::lower(g, with_tensor_cores(testing_support::h100_like_target())));
  EXPECT_EQ(lowering::testing_support::count_prefix(names, "widen_"), 0) << ::testing::PrintToString(names);
  EXPECT_EQ(lowering::testing_support::count_prefix(names, "cast_from_f16_f32"), 0) << ::testing::PrintToString(names);
  const auto mma = std::count_if(names.begin(), names.end(), [](const std::string& k) { return k.find("_nhwc_") != k.npos; });
  EXPECT_EQ(mma, 1) << ::testing::PrintToString(names);
}

// A bias created after its convolution (as the ONNX importer adds a Conv's bias): its cast up still comes before the
// convolution (compute_in_f32 puts leaves first), so the bias, ReLU and rounding stay the convolution's epilogue, and
// the cast is computed there, as each bias element is read.
TEST(HalfConv2d, TakesABiasCreatedAfterItAsItsEpilogue) {
  using lowering::testing_support::kernels_of;
  Graph g;
  auto x = g.input("x", DType::F16, {16, 64, 56, 56});
  auto w = g.parameter("w", DType::F16, {128, 64, 3, 3});
  auto conv = g.conv2d(x, w, {.stride = {2, 2}, .padding = {1, 1}});
  auto b = g.parameter("b", DType::F16, {128});
  g.output("y", g.name(g.relu(g.add(conv, g.reshape(b, {1, 128, 1, 1}))), "y"));
  const auto names = kernels_of(lowering::lower(g, with_tensor_cores(testing_support::h100_like_target())));
  ASSERT_EQ(names.size(), 3u) << ::testing::PrintToString(names);
  EXPECT_EQ(lowering::testing_support::count_prefix(names, "cast_"), 0) << ::testing::PrintToString(names);
  EXPECT_NE(names[2].find("_nhwc_"), std::string::npos) << names[2];
  EXPECT_NE(names[2].find("_mma_f32_cast_relu"), std::string::npos) << names[2];
}

struct HalfConvCase {
  std::string name;
  graph::Shape x, w;
  graph::Conv2dOptions opt;
  bool tensor_cores_pay = false;  // 64 or more blocks: the tensor-core kernel where the device has one
};

std::vector<HalfConvCase> half_conv_cases() {
  using O = graph::Conv2dOptions;
  return {
      // Small layers (widened and computed in f32 everywhere): 3x3 with padding; resnet's first layer in small (7x7 at
      // stride 2 over 3 channels: 147-term windows, rows of weights not on 16 bytes); a 1x1 layer; dilation; ragged
      // channels and positions everywhere.
      {"pad1", {2, 16, 9, 11}, {24, 16, 3, 3}, O{.padding = {1, 1}}},
      {"stem", {2, 3, 20, 18}, {16, 3, 7, 7}, O{.stride = {2, 2}, .padding = {3, 3}}},
      {"pointwise", {3, 32, 5, 7}, {20, 32, 1, 1}, O{}},
      {"dilated", {1, 8, 12, 10}, {8, 8, 3, 3}, O{.padding = {2, 2}, .dilation = {2, 2}}},
      // Layers of 64 or more blocks of 32 x 128 (on tensor cores where the device has them).
      {"pad1_wide", {2, 8, 64, 64}, {16, 8, 3, 3}, O{.padding = {1, 1}}, true},
      {"stem_wide", {3, 3, 112, 112}, {16, 3, 7, 7}, O{.stride = {2, 2}, .padding = {3, 3}}, true},
      {"dilated_wide", {2, 8, 64, 66}, {8, 8, 3, 3}, O{.padding = {2, 2}, .dilation = {2, 2}}, true},
      // 1x1 at stride 1: the product per image (rows of 4096 positions, and of 2745: B's rows not on 16 bytes).
      {"pointwise_wide", {2, 16, 64, 64}, {128, 16, 1, 1}, O{}, true},
      {"pointwise_ragged_rows", {3, 16, 45, 61}, {128, 16, 1, 1}, O{}, true},
  };
}

void PrintTo(const HalfConvCase& c, std::ostream* os) { *os << c.name; }

using HalfConvParam = std::tuple<std::string, HalfConvCase, DType>;
class HalfConv2dOnDevice : public ::testing::TestWithParam<HalfConvParam> {};

TEST_P(HalfConv2dOnDevice, MatchesTheFloat64Evaluator) {
  const auto& [device_id, c, h] = GetParam();
  auto dev = rt::open_device(device_id);
  const kir::Feature needs = h == DType::BF16 ? kir::Feature::BFloat16 : kir::Feature::Float16;
  if (!dev->info().features.has(needs)) GTEST_SKIP() << device_id << " has no " << graph::dtype_name(h);
  const Graph g = half_conv_layer(h, c.x, c.w, c.opt);
  const std::map<std::string, graph::Tensor> in{
      {"x", testing_support::uniform_tensor(c.x, 31, h).round_to_dtype()},
      {"w", testing_support::uniform_tensor(c.w, 32, h).round_to_dtype()},
      {"b", testing_support::uniform_tensor({c.w[0]}, 33, h).round_to_dtype()}};
  const graph::Tensor want = graph::evaluate(g, in, DType::F64).at("y");
  const uint64_t before = rt::vulkan::validation_message_count();
  const lowering::Plan plan = lowering::lower(g, dev->info());
  const auto names = lowering::testing_support::kernels_of(plan);
  const bool tensor_cores = dev->info().features.has(kir::Feature::CooperativeMatrix) && c.tensor_cores_pay;
  // Without tensor cores each operand is widened or read as stored by the f32 kernels (on lavapipe, whose direct
  // kernels read element by element, as stored; the implicit GEMM, which the wide 1x1 layers take there, reads the
  // weights in vectors, widened once).
  const int widened = lowering::testing_support::count_prefix(names, "widen_");
  const int in_place = operands_read_in_place(names, graph::dtype_name(h));
  EXPECT_EQ(widened + in_place, tensor_cores ? 0 : 2) << ::testing::PrintToString(names);
  const bool gemm = std::any_of(names.begin(), names.end(), [](const std::string& k) { return k.find("_gemm_") != k.npos; });
  if (dev->info().type == rt::DeviceType::Cpu && !gemm) {
    EXPECT_EQ(widened, 0) << ::testing::PrintToString(names);
  }
  // On tensor cores, channels last where the input channels come in multiples of 8 and the window has more than one
  // tap (input and weights moved first).
  const int moves = tensor_cores && c.x[1] % 8 == 0 && c.w[2] * c.w[3] > 1 ? 2 : 0;
  EXPECT_EQ(lowering::testing_support::count_prefix(names, "channels_last_"), moves) << ::testing::PrintToString(names);
  // On tensor cores a 1x1 window at stride 1 over images of whole 16-byte pieces copies its input's rows (a pipeline,
  // "_c2"/"_c3"); other layers read as stored gather their input ("_c1": the weights alone copy).
  if (tensor_cores && c.w[2] * c.w[3] == 1) {
    const auto conv = std::find_if(names.begin(), names.end(), [](const std::string& k) { return k.rfind("conv2d_", 0) == 0; });
    ASSERT_NE(conv, names.end()) << ::testing::PrintToString(names);
    const bool rows = c.x[2] * c.x[3] % 8 == 0 && dev->info().features.has(kir::Feature::AsyncCopy);
    EXPECT_EQ(conv->find("_c1_") == std::string::npos, rows) << *conv;
  }
  auto exe = lowering::compile(g, *dev);
  for (const auto& [name, t] : in) exe->set(name, t);
  exe->step();
  const graph::Tensor got = exe->get("y");
  ASSERT_EQ(got.shape, want.shape);
  EXPECT_LE(harness::max_norm_error(got, want), graph::op_tolerance(graph::OpKind::Conv2d, false, h));
  EXPECT_EQ(rt::vulkan::validation_message_count(), before) << "the Vulkan validation layer reported messages";
}

INSTANTIATE_TEST_SUITE_P(AllDevices, HalfConv2dOnDevice,
                         ::testing::Combine(::testing::ValuesIn(lowering::testing_support::device_ids()),
                                            ::testing::ValuesIn(half_conv_cases()),
                                            ::testing::Values(DType::BF16, DType::F16)),
                         [](const auto& info) {
                           return lowering::testing_support::test_name(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param).name + "_" + std::string(graph::dtype_name(std::get<2>(info.param)));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(HalfConv2dOnDevice);

}  // namespace
}  // namespace half_conv2d_test
