// Lowering with tuning choices (no device needed): a choice puts that config's kernel into the plan, a choice
// that is not a candidate is ignored with one warning, and the TunableOps the tuner times build exactly the
// kernels lowering emits.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "frontend/lenet.h"
#include "ir/kernel/printer.h"
#include "lowering/plan.h"
#include "lowering/tunable_ops.h"

using namespace spire;
using graph::DType;

namespace {

rt::DeviceInfo target() {
  rt::DeviceInfo d;
  d.id = "test:0";
  d.max_buffer_bytes = 1ull << 30;
  d.shared_memory_bytes = 49152;
  d.max_workgroup_invocations = 1024;
  d.max_workgroup_size = {1024, 1024, 64};
  return d;
}

std::vector<std::string> kernel_names(const lowering::Plan& p) {
  std::vector<std::string> out;
  for (const auto& k : p.kernels) out.push_back(k.name);
  return out;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

graph::Graph matmul_graph() {
  graph::Graph g;
  g.output("y", g.matmul(g.input("a", DType::F32, {64, 784}), g.input("b", DType::F32, {784, 120})));
  return g;
}

TEST(TunedLowering, AChoiceSelectsItsMatmulTiling) {
  const graph::Graph g = matmul_graph();
  EXPECT_TRUE(has(kernel_names(lowering::lower(g, target())), "matmul_m64_k784_n120_t16x16x16_r1x1_f32"));
  lowering::MapTuningChoices choices;
  choices.configs[{"matmul", "m64_k784_n120", "f32"}] =
      lowering::heavy::Config::parse("tile_m=32,tile_n=64,tile_k=16,reg_m=2,reg_n=4");
  const lowering::Plan plan = lowering::lower(g, target(), nullptr, &choices);
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].name, "matmul_m64_k784_n120_t32x64x16_r2x4_f32");
  EXPECT_EQ(plan.kernels[0].workgroup_invocations(), 256u);
  EXPECT_EQ(plan.launches[0].groups, 2u * 2u);
}

TEST(TunedLowering, ChoicesSelectConvAndReductionConfigs) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {2, 4, 9, 11});
  auto w = g.input("w", DType::F32, {8, 4, 3, 3});
  auto y = g.conv2d(x, w, {.padding = {1, 1}});
  g.output("y", y);
  g.output("s", g.sum(y, {0}));
  lowering::MapTuningChoices choices;
  choices.configs[{"conv2d", "n2_c4_h9_w11_k8_r3x3_s1x1_p1x1_d1x1_g1", "f32"}] =
      lowering::heavy::Config::parse("rows=0,wg=128,c_block=2");
  choices.configs[{"reduce_sum", "2x8x9x11_r0", "f32"}] = lowering::heavy::Config::parse("path=0,wg=64,chunks=1");
  const lowering::Plan plan = lowering::lower(g, target(), nullptr, &choices);
  const auto names = kernel_names(plan);
  EXPECT_TRUE(has(names, "conv2d_n2_c4_h9_w11_k8_r3x3_s1x1_p1x1_d1x1_g1_f32_elems_wg128_c2")) << lowering::plan_text(plan);
  EXPECT_TRUE(has(names, "sum_f32_2x8x9x11_to_8x9x11_loop_w64")) << lowering::plan_text(plan);
  for (const auto& k : plan.kernels)
    if (k.name.find("conv2d") == 0) {
      EXPECT_EQ(k.workgroup_invocations(), 128u);
    }
}

// A 3x3 convolution at stride 1 with many channels takes Winograd by default: four launches (weight and input
// transforms, batched products, output transform) with three scratch buffers; F(4x4, 3x3) (36 products) in float32
// where its products have 256 tiles or more, else F(2x2, 3x3) (16), as in float64 always; the tuning choice gives
// either. A stride-2 convolution and one with few channels keep a single kernel, and so does a direct-sum choice.
TEST(TunedLowering, WinogradForWideStrideOneThreeByThreeConvolutions) {
  auto conv = [](int64_t n, int64_t hw, int64_t c, int64_t stride, DType t = DType::F32) {
    graph::Graph g;
    g.output("y", g.conv2d(g.input("x", t, {n, c, hw, hw}), g.input("w", t, {c, c, 3, 3}),
                           {.stride = {stride, stride}, .padding = {1, 1}}));
    return g;
  };
  auto starts_with = [](const std::vector<std::string>& names, const std::string& prefix) {
    return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.find(prefix) == 0; });
  };
  // 8 images of 7 x 7 tiles of 4x4.
  const lowering::Plan many = lowering::lower(conv(8, 28, 64, 1), target());
  const auto names = kernel_names(many);
  ASSERT_EQ(many.launches.size(), 4u) << lowering::plan_text(many);
  EXPECT_TRUE(has(names, "conv2d_winograd4_weights_n8_c64_h28_w28_k64_r3x3_s1x1_p1x1_d1x1_g1_f32")) << lowering::plan_text(many);
  EXPECT_TRUE(has(names, "conv2d_winograd4_input_n8_c64_h28_w28_k64_r3x3_s1x1_p1x1_d1x1_g1_f32"));
  EXPECT_TRUE(has(names, "conv2d_winograd4_output_n8_c64_h28_w28_k64_r3x3_s1x1_p1x1_d1x1_g1_f32"));
  EXPECT_TRUE(starts_with(names, "matmul_m64_k64_n392_a36_b36_")) << lowering::plan_text(many);

  // 2 images of 4 x 4 tiles of 4x4 (32), or 7 x 7 of 2x2 (98): F(2x2, 3x3).
  const lowering::Plan few = lowering::lower(conv(2, 14, 64, 1), target());
  ASSERT_EQ(few.launches.size(), 4u) << lowering::plan_text(few);
  EXPECT_TRUE(has(kernel_names(few), "conv2d_winograd_input_n2_c64_h14_w14_k64_r3x3_s1x1_p1x1_d1x1_g1_f32")) << lowering::plan_text(few);
  EXPECT_TRUE(starts_with(kernel_names(few), "matmul_m64_k64_n98_a16_b16_t64x64x16_r8x8"));
  const lowering::Plan f64 = lowering::lower(conv(8, 28, 64, 1, DType::F64), target());
  EXPECT_TRUE(has(kernel_names(f64), "conv2d_winograd_input_n8_c64_h28_w28_k64_r3x3_s1x1_p1x1_d1x1_g1_f64"))
      << lowering::plan_text(f64);
  EXPECT_EQ(lowering::lower(conv(2, 14, 64, 2), target()).launches.size(), 1u);
  EXPECT_EQ(lowering::lower(conv(2, 14, 16, 1), target()).launches.size(), 1u);

  lowering::MapTuningChoices f4;
  f4.configs[{"conv2d", "n2_c64_h14_w14_k64_r3x3_s1x1_p1x1_d1x1_g1", "f32"}] =
      lowering::heavy::Config::parse("tile_m=16,tile_n=16,tile_k=16,reg_m=1,reg_n=1,winograd=4");
  const auto f4_names = kernel_names(lowering::lower(conv(2, 14, 64, 1), target(), nullptr, &f4));
  EXPECT_TRUE(has(f4_names, "conv2d_winograd4_input_n2_c64_h14_w14_k64_r3x3_s1x1_p1x1_d1x1_g1_f32"));
  EXPECT_TRUE(starts_with(f4_names, "matmul_m64_k64_n32_a36_b36_t16x16x16_r1x1"));

  lowering::MapTuningChoices choices;
  choices.configs[{"conv2d", "n2_c64_h14_w14_k64_r3x3_s1x1_p1x1_d1x1_g1", "f32"}] =
      lowering::heavy::Config::parse("tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4");
  const lowering::Plan direct = lowering::lower(conv(2, 14, 64, 1), target(), nullptr, &choices);
  ASSERT_EQ(direct.launches.size(), 1u);
  EXPECT_EQ(direct.kernels[0].name, "conv2d_n2_c64_h14_w14_k64_r3x3_s1x1_p1x1_d1x1_g1_f32_gemm_t64x64x16_r4x4");
}

// The weight gradient of such a convolution takes Winograd too, by the forward's rules: the input and grad_y
// transforms, the products over the batch's tiles (split where planes x Cin x Cout gives few blocks: resnet18's layer1
// at batch 64 has 36 blocks of 64x64 over 12544 tiles of 4x4, split 16 ways for 576 workgroups; layer4's 36 x 16
// blocks of 128x128 are not split) and the transform back, which adds the splits; at batch 1 F(2x2, 3x3). A stride-2
// one and one with few channels keep their own kernels.
TEST(TunedLowering, WinogradForTheWeightGradientsOfWideStrideOneThreeByThreeConvolutions) {
  auto grad_weight = [](int64_t n, int64_t c, int64_t hw, int64_t stride) {
    graph::Graph probe;
    const graph::Conv2dOptions o{.stride = {stride, stride}, .padding = {1, 1}};
    auto y = probe.conv2d(probe.input("x", DType::F32, {n, c, hw, hw}), probe.input("w", DType::F32, {c, c, 3, 3}), o);
    graph::Graph g;
    g.output("gw", g.conv2d_grad_weight(g.input("gy", DType::F32, probe.type(y).shape),
                                        g.input("x", DType::F32, {n, c, hw, hw}), o, {c, c, 3, 3}));
    return g;
  };
  const lowering::Plan layer1 = lowering::lower(grad_weight(64, 64, 56, 1), target());
  const auto names = kernel_names(layer1);
  ASSERT_EQ(layer1.launches.size(), 4u) << lowering::plan_text(layer1);
  EXPECT_TRUE(has(names, "conv2d_winograd4_input_n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1_f32")) << lowering::plan_text(layer1);
  EXPECT_TRUE(has(names, "conv2d_winograd4_grad_y_n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1_f32"));
  EXPECT_TRUE(has(names, "matmul_m64_k12544_n64_a36_b36_t64x64x16_r8x8_s16_f32")) << lowering::plan_text(layer1);
  EXPECT_TRUE(has(names, "conv2d_winograd4_grad_weights_n64_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1_f32_s16"));
  EXPECT_EQ(layer1.launches[2].groups, 36u * 16u);

  const lowering::Plan layer4 = lowering::lower(grad_weight(64, 512, 7, 1), target());
  EXPECT_TRUE(has(kernel_names(layer4), "matmul_m512_k256_n512_a36_b36_t128x128x8_r8x8_f32")) << lowering::plan_text(layer4);
  EXPECT_TRUE(has(kernel_names(layer4), "conv2d_winograd4_grad_weights_n64_c512_h7_w7_k512_r3x3_s1x1_p1x1_d1x1_g1_f32"));

  const lowering::Plan batch1 = lowering::lower(grad_weight(1, 64, 56, 1), target());
  EXPECT_TRUE(has(kernel_names(batch1), "conv2d_winograd_grad_y_n1_c64_h56_w56_k64_r3x3_s1x1_p1x1_d1x1_g1_f32")) << lowering::plan_text(batch1);

  for (const lowering::Plan& own : {lowering::lower(grad_weight(2, 64, 14, 2), target()), lowering::lower(grad_weight(2, 16, 14, 1), target())})
    for (const auto& name : kernel_names(own)) EXPECT_EQ(name.find("conv2d_winograd"), std::string::npos) << name;
}

// A weight gradient by the GEMM with few blocks over a very long K (resnet18's first layer at batch 64: 64 x 147 in 3
// blocks of 64x64 over 802816 positions) is split until 512 workgroups (170 splits), and offered its heuristic tiling at
// half, twice and four times that and at 64 to 512 splits, as far as each split keeps 4 slices of K. With few
// positions and many channels (resnet18's layer4 at batch 1) the GEMM takes it unsplit, in 64x64 blocks where they are
// 64 or more, else 32x32.
TEST(TunedLowering, WeightGradientsByTheGemmSplitUntil512WorkgroupsAndTakeFewPositionsToo) {
  auto grad_weight = [](int64_t n, int64_t cin, int64_t cout, int64_t k, int64_t hw) {
    graph::Graph probe;
    const graph::Conv2dOptions o{.stride = {2, 2}, .padding = {k / 2, k / 2}};
    auto y = probe.conv2d(probe.input("x", DType::F32, {n, cin, hw, hw}), probe.input("w", DType::F32, {cout, cin, k, k}), o);
    graph::Graph g;
    g.output("gw", g.conv2d_grad_weight(g.input("gy", DType::F32, probe.type(y).shape),
                                        g.input("x", DType::F32, {n, cin, hw, hw}), o, {cout, cin, k, k}));
    return g;
  };
  auto splits_of = [](const lowering::TunableOp& op) {
    std::set<int64_t> out;
    for (const auto& c : op.candidates)
      if (c.has("splits") && c.has("tile_k") && c.get("tile_m") == 64 && c.get("tile_k") == 16 && c.get("reg_m") == 4)
        out.insert(c.get("splits"));
    return out;
  };
  const auto batch64 = lowering::tunable_ops(grad_weight(64, 3, 64, 7, 224), target());
  ASSERT_EQ(batch64.size(), 1u);
  EXPECT_EQ(batch64[0].heuristic.text(), "tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=170");
  const std::set<int64_t> deep = splits_of(batch64[0]);
  for (int64_t splits : {64, 85, 128, 256, 340, 512}) EXPECT_TRUE(deep.count(splits)) << splits;
  // 2 x 56 x 56 positions: 392 slices, 49 splits in the heuristic, up to 98 (4 slices each) offered, never more.
  const auto batch2 = lowering::tunable_ops(grad_weight(2, 3, 64, 7, 112), target());
  EXPECT_EQ(batch2[0].heuristic.text(), "tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=49");
  const std::set<int64_t> shallow = splits_of(batch2[0]);
  for (int64_t splits : {24, 64, 98}) EXPECT_TRUE(shallow.count(splits)) << splits;
  EXPECT_EQ(*shallow.rbegin(), 98);

  // resnet18's layer4.0.conv1 (256 -> 512, 3x3 at stride 2) and its downsample (1x1) at batch 1: 49 positions.
  EXPECT_EQ(lowering::tunable_ops(grad_weight(1, 256, 512, 3, 14), target())[0].heuristic.text(),
            "tile_m=64,tile_n=64,tile_k=16,reg_m=4,reg_n=4,splits=1");
  EXPECT_EQ(lowering::tunable_ops(grad_weight(1, 256, 512, 1, 14), target())[0].heuristic.text(),
            "tile_m=32,tile_n=32,tile_k=16,reg_m=2,reg_n=2,splits=1");
}

// The test target as a device of another type (lowering's rules differ between GPUs and CPUs).
rt::DeviceInfo target_of_type(rt::DeviceType type) {
  rt::DeviceInfo info = target();
  info.type = type;
  return info;
}

// The plan's kernel names in one string, each followed by a space.
std::string joined_kernel_names(const lowering::Plan& p) {
  std::string names;
  for (const std::string& name : kernel_names(p)) names += name + " ";
  return names;
}

// A strided convolution of many channels at batch 1 has few positions, too few for the GEMM's 64x64 blocks: on a GPU it
// takes the GEMM in 32x32 blocks (64 or more of them) or 16x16 ones, not the row kernel; on a CPU, and for LeNet's
// short windows, the direct kernels stay.
TEST(TunedLowering, FewPositionsOfManyChannelsTakeTheGemmInSmallBlocksOnAGpu) {
  auto conv = [](int64_t cin, int64_t cout, int64_t hw, int64_t k, int64_t stride, int64_t pad) {
    graph::Graph g;
    g.output("y", g.conv2d(g.input("x", DType::F32, {1, cin, hw, hw}), g.input("w", DType::F32, {cout, cin, k, k}),
                           {.stride = {stride, stride}, .padding = {pad, pad}}));
    return g;
  };
  const rt::DeviceInfo gpu = target_of_type(rt::DeviceType::DiscreteGpu);
  EXPECT_EQ(joined_kernel_names(lowering::lower(conv(64, 128, 56, 3, 2, 1), gpu)),
            "conv2d_n1_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1_f32_gemm_t32x32x32_r2x2 ");
  EXPECT_EQ(joined_kernel_names(lowering::lower(conv(256, 512, 14, 3, 2, 1), gpu)),
            "conv2d_n1_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1_f32_gemm_t16x16x32_r1x1 ");
  EXPECT_EQ(joined_kernel_names(lowering::lower(conv(128, 256, 28, 1, 2, 0), gpu)),
            "conv2d_n1_c128_h28_w28_k256_r1x1_s2x2_p0x0_d1x1_g1_f32_gemm_t16x16x32_r1x1 ");
  const rt::DeviceInfo cpu = target_of_type(rt::DeviceType::Cpu);
  EXPECT_EQ(joined_kernel_names(lowering::lower(conv(64, 128, 56, 3, 2, 1), cpu)).find("_gemm_"), std::string::npos);
  EXPECT_EQ(joined_kernel_names(lowering::lower(conv(6, 16, 14, 5, 1, 0), gpu)).find("_gemm_"), std::string::npos);
}

// The input gradients of resnet18's strided layers at batch 1: every phase in one launch, split (a second launch adds
// the splits); layer2's 3x3 in 32x32 blocks, layer4's long window in 64x64 ones, the 1x1 layer's short one in 16x16
// ones unsplit (after a zero fill of the three phases it does not reach); a CPU and LeNet's few channels keep the
// direct kernels.
TEST(TunedLowering, StridedInputGradientsOfFewPositionsTakeThePhasesInSmallBlocksOnAGpu) {
  auto grad_input = [](int64_t cin, int64_t cout, int64_t hw, int64_t k, int64_t stride, int64_t pad) {
    const graph::Conv2dOptions o{.stride = {stride, stride}, .padding = {pad, pad}};
    const int64_t ho = (hw + 2 * pad - k) / stride + 1;
    graph::Graph g;
    g.output("gx", g.conv2d_grad_input(g.input("gy", DType::F32, {1, cout, ho, ho}), g.input("w", DType::F32, {cout, cin, k, k}),
                                       o, {1, cin, hw, hw}));
    return g;
  };
  const rt::DeviceInfo gpu = target_of_type(rt::DeviceType::DiscreteGpu);
  const auto kernels = joined_kernel_names;
  EXPECT_EQ(kernels(lowering::lower(grad_input(64, 128, 56, 3, 2, 1), gpu)),
            "conv2d_grad_input_n1_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1_f32_gemm_t32x32x32_r2x2_phases_s2 "
            "conv2d_grad_input_n1_c64_h56_w56_k128_r3x3_s2x2_p1x1_d1x1_g1_f32_split_sum_s2 ");
  EXPECT_EQ(kernels(lowering::lower(grad_input(256, 512, 14, 3, 2, 1), gpu)),
            "conv2d_grad_input_n1_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1_f32_gemm_t64x64x16_r4x4_phases_s8 "
            "conv2d_grad_input_n1_c256_h14_w14_k512_r3x3_s2x2_p1x1_d1x1_g1_f32_split_sum_s8 ");
  EXPECT_EQ(kernels(lowering::lower(grad_input(64, 128, 56, 1, 2, 0), gpu)),
            "conv2d_grad_input_n1_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1_f32_zeros "
            "conv2d_grad_input_n1_c64_h56_w56_k128_r1x1_s2x2_p0x0_d1x1_g1_f32_gemm_t16x16x16_r1x1_phases_reached ");
  const rt::DeviceInfo cpu = target_of_type(rt::DeviceType::Cpu);
  EXPECT_EQ(kernels(lowering::lower(grad_input(64, 128, 56, 3, 2, 1), cpu)).find("_gemm_"), std::string::npos);
  EXPECT_EQ(kernels(lowering::lower(grad_input(6, 16, 28, 5, 2, 2), gpu)).find("_gemm_"), std::string::npos);
}

TEST(TunedLowering, AChoiceThatIsNoCandidateIsIgnoredWithOneWarning) {
  const graph::Graph g = matmul_graph();
  lowering::MapTuningChoices choices;
  choices.configs[{"matmul", "m64_k784_n120", "f32"}] =
      lowering::heavy::Config::parse("tile_m=48,tile_n=48,tile_k=16,reg_m=3,reg_n=3");
  testing::internal::CaptureStderr();
  const lowering::Plan a = lowering::lower(g, target(), nullptr, &choices);
  const lowering::Plan b = lowering::lower(g, target(), nullptr, &choices);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(a.kernels[0].name, "matmul_m64_k784_n120_t16x16x16_r1x1_f32");
  EXPECT_EQ(b.kernels[0].name, a.kernels[0].name);
  EXPECT_NE(err.find("tile_m=48"), std::string::npos) << err;
  EXPECT_EQ(err.find("warning"), err.rfind("warning")) << "warned more than once: " << err;
}

// What --tune times must be what lowering launches: each TunableOp's heuristic program has exactly the
// kernels the plan has for that node, and every key is listed once.
TEST(TunedLowering, TunableOpsBuildWhatLoweringEmits) {
  nn::LeNetGraphOptions opt;
  opt.batch = 16;
  opt.sgd = true;
  const graph::Graph g = nn::build_lenet_graph(opt);
  const lowering::Plan plan = lowering::lower(g, target());
  std::set<std::string> plan_kernels, plan_names;
  for (const auto& k : plan.kernels) plan_kernels.insert(kir::print(k));
  for (const auto& k : plan.kernels) plan_names.insert(k.name);
  // A kernel the plan holds as is, or with an epilogue folded into its stores (lowering/fuse.h): then its name
  // goes on with the epilogue's ops ("matmul_..._f32_relu_add"), and the tuner timed it without them.
  auto in_plan = [&](const kir::Kernel& k) {
    if (plan_kernels.count(kir::print(k))) return true;
    auto it = plan_names.lower_bound(k.name + "_");
    return it != plan_names.end() && it->rfind(k.name + "_", 0) == 0;
  };
  const auto ops = lowering::tunable_ops(g, target());
  std::set<std::string> ops_seen, keys;
  for (const auto& op : ops) {
    EXPECT_TRUE(keys.insert(op.key.text()).second) << op.key.text();
    ops_seen.insert(op.key.op);
    ASSERT_FALSE(op.candidates.empty());
    EXPECT_EQ(op.candidates.front(), op.heuristic) << op.key.text();
    for (const auto& l : op.build(op.heuristic).launches)
      EXPECT_TRUE(in_plan(l.kernel)) << op.key.text() << ": " << l.kernel.name;
  }
  // No reduce_sum: every bias gradient is a side output of a launch that reads its gradient anyway (lowering/fuse.h).
  for (const char* family : {"conv2d", "conv2d_grad_input", "conv2d_grad_weight", "matmul", "cross_entropy",
                             "cross_entropy_grad"})
    EXPECT_TRUE(ops_seen.count(family)) << family;
  EXPECT_FALSE(ops_seen.count("reduce_sum"));
}

}  // namespace
