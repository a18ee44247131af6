// The kernel templates without a device: every template on representative shapes builds, passes the kernel
// verifier and the SPIR-V validator, fits the 16 KiB of workgroup memory every Vulkan device offers, launches
// enough workgroups, and assembles with ptxas (sm_75 and sm_90) where the CUDA toolkit is installed. Also the
// lowerings' bookkeeping through a recording LoweringContext: buffers in the kernel's order, empty results
// launch nothing, and shapes the kernels cannot index are refused with a GraphError naming the node.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>

#include "backends/ptx/ptx_backend.h"
#include "backends/spirv/spirv_backend.h"
#include "kernels/conv2d_kernels.h"
#include "kernels/matmul_kernel.h"
#include "kernels/pool2d_kernels.h"
#include "kernels/softmax_kernels.h"
#include "kernels/widen_kernel.h"
#include "lowering/op_lowering.h"
#include "tests/backends/ptx/ptxas_runner.h"
#include "tests/support/named_ops.h"

namespace templates_test {  // the file's own names: test executables build as unity batches

using namespace spire;
namespace heavy = spire::lowering::heavy;

namespace {

struct TemplateCase {
  std::string label;
  std::function<heavy::HeavyKernel()> make;
  uint64_t min_invocations = 0;  // the launch must start at least this many invocations
};

void PrintTo(const TemplateCase& c, std::ostream* os) { *os << c.label; }

std::vector<TemplateCase> template_cases() {
  std::vector<TemplateCase> out;
  for (kir::Type t : {kir::Type::F32, kir::Type::F64}) {
    std::string ts(dtype_name(t));
    for (auto [a, b] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
             {{1, 1}, {1, 1}}, {{8, 784}, {784, 120}}, {{2, 65, 33}, {33, 129}}, {{130, 70}, {3, 1, 70, 129}},
             {{2, 300, 70}, {70, 270}}, {{8, 300, 33}, {33, 700}}}) {
      auto s = heavy::matmul_shape(a, b);
      out.push_back({fmt::format("matmul_{}_{}x{}x{}_{}", heavy::dims_text(s.batch), s.m, s.k, s.n, ts),
                     [s, t] { return heavy::matmul_kernel(s, t); }, 0});
    }
    struct ConvGeom { std::string name; std::vector<int64_t> x, w, stride, pad, dil; int64_t groups; };
    for (const ConvGeom& c : std::vector<ConvGeom>{{"lenet1", {8, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1},
                                                   {"all", {2, 6, 11, 9}, {4, 3, 3, 3}, {3, 2}, {2, 1}, {2, 1}, 2},
                                                   {"big", {1, 2, 12, 12}, {2, 2, 8, 8}, {1, 1}, {3, 3}, {1, 1}, 1}}) {
      auto s = heavy::conv2d_shape(c.x, c.w, c.stride, c.pad, c.dil, c.groups);
      // Rows, not elements: the forward and input-gradient kernels compute a whole row per invocation where
      // rows are short, so the bound they must reach is one invocation per row.
      uint64_t out_n = uint64_t(s.n * s.cout * s.ho), in_n = uint64_t(s.n * s.cin * s.h);
      out.push_back({"conv2d_" + c.name + "_" + ts, [s, t] { return heavy::conv2d_kernel(s, t); }, out_n});
      out.push_back({"conv2d_grad_input_" + c.name + "_" + ts, [s, t] { return heavy::conv2d_grad_input_kernel(s, t); }, in_n});
      out.push_back({"conv2d_grad_weight_" + c.name + "_" + ts, [s, t] { return heavy::conv2d_grad_weight_kernel(s, t); }, 0});
      // The split form (partial sums, then a launch that adds them) at the split count the lowering picks.
      uint32_t splits = std::max(2u, heavy::conv2d_grad_weight_splits(s, t));
      uint64_t w_n = uint64_t(s.cout * s.cin_per_group() * s.kh * s.kw);
      out.push_back({"conv2d_grad_weight_split_" + c.name + "_" + ts, [s, t, splits] { return heavy::conv2d_grad_weight_kernel(s, t, splits); }, 0});
      out.push_back({"conv2d_grad_weight_sum_" + c.name + "_" + ts, [s, t, splits] { return heavy::conv2d_grad_weight_sum_kernel(s, t, splits); }, w_n});
      // With the bias's partial sums after each split's weights' (two results).
      out.push_back({"conv2d_grad_weight_sum_bias_" + c.name + "_" + ts,
                     [s, t, splits] { return heavy::conv2d_grad_weight_sum_kernel(s, t, splits, true); }, 0});
    }
    struct PoolGeom { std::string name; std::vector<int64_t> x, k, s, p; };
    for (const PoolGeom& c : std::vector<PoolGeom>{{"lenet", {8, 6, 28, 28}, {2, 2}, {2, 2}, {0, 0}},
                                                   {"k3s2p1", {2, 3, 9, 7}, {3, 3}, {2, 2}, {1, 1}},
                                                   {"big", {1, 1, 16, 16}, {8, 8}, {4, 4}, {4, 4}}}) {
      auto s = heavy::pool2d_shape(c.x, c.k, c.s, c.p);
      uint64_t out_n = uint64_t(s.n * s.c * s.ho * s.wo), in_n = uint64_t(s.n * s.c * s.h * s.w);
      out.push_back({"max_pool2d_" + c.name + "_" + ts, [s, t] { return heavy::max_pool2d_kernel(s, t); }, out_n});
      // Windows that tile the input take one invocation per window (writing all of it), else one per input element.
      const bool tiling = s.stride_h == s.kh && s.stride_w == s.kw && s.pad_h == 0 && s.pad_w == 0 &&
                          s.h == s.ho * s.kh && s.w == s.wo * s.kw;
      out.push_back({"max_pool2d_grad_" + c.name + "_" + ts, [s, t] { return heavy::max_pool2d_grad_kernel(s, t); },
                     tiling ? out_n : in_n});
      out.push_back({"max_pool2d_argmax_" + c.name + "_" + ts, [s, t] { return heavy::max_pool2d_argmax_kernel(s, t); }, out_n});
      out.push_back({"max_pool2d_with_argmax_" + c.name + "_" + ts, [s, t] { return heavy::max_pool2d_kernel(s, t, true); }, out_n});
      out.push_back({"max_pool2d_grad_argmax_" + c.name + "_" + ts,
                     [s, t] { return heavy::max_pool2d_grad_argmax_kernel(s, t); }, tiling ? out_n : in_n});
      if (tiling)  // with each channel's sums per chunk of images: one workgroup a (channel, chunk)
        for (bool loads_first : {false, true})
          out.push_back({"max_pool2d_grad_argmax_sums_" + c.name + (loads_first ? "_lf_" : "_") + ts, [s, t, loads_first] {
                           return heavy::max_pool2d_grad_argmax_kernel(s, t, false, heavy::max_pool2d_grad_sum_chunks(s),
                                                                       loads_first);
                         }, 0});
      for (bool mask : {false, true})
        out.push_back({"pooled_channel_sums_" + c.name + (mask ? "_relu_mask_" : "_") + ts,
                       [s, t, mask] { return heavy::pooled_channel_sums_kernel(s, t, mask); }, 0});
      out.push_back({"avg_pool2d_" + c.name + "_" + ts, [s, t] { return heavy::avg_pool2d_kernel(s, t); }, out_n});
      out.push_back({"avg_pool2d_grad_" + c.name + "_" + ts, [s, t] { return heavy::avg_pool2d_grad_kernel(s, t); }, in_n});
    }
    for (auto [shape, axis] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{{{8, 10}, 1}, {{2, 700, 3}, 1}}) {
      auto s = heavy::softmax_shape(shape, axis);
      for (bool log : {false, true})
        out.push_back({fmt::format("{}_{}_{}", log ? "log_softmax" : "softmax", heavy::dims_text(shape), ts),
                       [s, t, log] { return heavy::softmax_kernel(s, t, log); }, 0});
    }
    out.push_back({"cross_entropy_300x7_" + ts, [t] { return heavy::cross_entropy_kernel(300, 7, t); }, 0});
    out.push_back({"cross_entropy_grad_8x10_" + ts, [t] { return heavy::cross_entropy_grad_kernel(8, 10, t); }, 80});
    out.push_back({"cross_entropy_grad_5x300_" + ts, [t] { return heavy::cross_entropy_grad_kernel(5, 300, t); }, 0});
    // With subgroup shuffles baked in (workgroup_reduce.h): NVIDIA's 32, and 8, which PTX keeps as the unused path.
    for (uint32_t sg : {32u, 8u}) {
      auto s = heavy::softmax_shape({2, 700, 3}, 1);
      out.push_back({fmt::format("softmax_2x700x3_sg{}_{}", sg, ts),
                     [s, t, sg] { return heavy::softmax_kernel(s, t, false, heavy::softmax_heuristic(s), sg); }, 0});
      out.push_back({fmt::format("cross_entropy_300x7_sg{}_{}", sg, ts),
                     [t, sg] { return heavy::cross_entropy_kernel(300, 7, t, heavy::cross_entropy_heuristic(300), sg); }, 0});
      out.push_back({fmt::format("cross_entropy_grad_5x300_sg{}_{}", sg, ts), [t, sg] {
                       return heavy::cross_entropy_grad_kernel(5, 300, t, heavy::cross_entropy_grad_heuristic(5, 300), sg);
                     }, 0});
    }
  }
  // A convolution's half operands widened to f32 where it does not run on tensor cores (lower_conv2d.cpp).
  for (kir::Type half : {kir::Type::F16, kir::Type::BF16})
    out.push_back({fmt::format("widen_{}_1000", dtype_name(half)), [half] { return heavy::widen_kernel(half, 1000); },
                   1000});
  return out;
}

class Template : public testing::TestWithParam<TemplateCase> {};

TEST_P(Template, BuildsVerifiesAndValidatesAsSpirv) {
  heavy::HeavyKernel k = GetParam().make();
  EXPECT_EQ(kir::verify(k.kernel), "");
  EXPECT_GT(k.groups, 0u);
  EXPECT_GE(k.groups * k.kernel.workgroup_invocations(), GetParam().min_invocations) << "the launch misses elements";
  EXPECT_LE(k.kernel.shared_bytes(), 16384u) << "more workgroup memory than every Vulkan device guarantees";
  EXPECT_LE(k.kernel.workgroup_invocations(), 256u) << "more invocations than every Vulkan device guarantees";
  EXPECT_TRUE(k.kernel.scalars.empty()) << "shapes are constants: the heavy kernels take no scalars";
  EXPECT_NO_THROW(spirv::compile(k.kernel)) << k.kernel.name;
}

TEST_P(Template, AssemblesWithPtxas) {
  auto ptxas = ptx::testing::find_ptxas();
  heavy::HeavyKernel k = GetParam().make();
  for (uint32_t sm : {75u, 90u}) {
    std::string text;
    ASSERT_NO_THROW(text = ptx::compile(k.kernel, {sm})) << k.kernel.name;
    if (!ptxas) continue;
    auto r = ptx::testing::assemble(*ptxas, text, sm);
    EXPECT_TRUE(r.ok) << k.kernel.name << " sm_" << sm << ":\n" << r.log;
  }
  if (!ptxas) GTEST_SKIP() << "PTX generated, but no ptxas (CUDA toolkit) here to assemble it";
}

INSTANTIATE_TEST_SUITE_P(Heavy, Template, testing::ValuesIn(template_cases()),
                         [](const testing::TestParamInfo<TemplateCase>& p) { return p.param.label; });

TEST(TemplateNames, CarryTheShape) {
  auto s = heavy::conv2d_shape({8, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  EXPECT_EQ(heavy::conv2d_kernel(s, kir::Type::F32).kernel.name, "conv2d_n8_c1_h28_w28_k6_r5x5_s1x1_p2x2_d1x1_g1_f32");
  auto m = heavy::matmul_shape({8, 784}, {784, 120});  // LeNet's fc.1 at batch 8
  EXPECT_EQ(heavy::matmul_kernel(m, kir::Type::F32).kernel.name, "matmul_m8_k784_n120_t16x16x16_r1x1_f32");
  auto p = heavy::pool2d_shape({8, 6, 28, 28}, {2, 2}, {2, 2}, {0, 0});
  EXPECT_EQ(heavy::max_pool2d_kernel(p, kir::Type::F64).kernel.name, "max_pool2d_n8_c6_h28_w28_k2x2_s2x2_p0x0_f64");
  EXPECT_TRUE(heavy::max_pool2d_kernel(p, kir::Type::F64).kernel.features.has(kir::Feature::Float64));
}

TEST(TemplateShapes, TilingGrowsWithTheProduct) {
  auto tile = [](std::vector<int64_t> a, std::vector<int64_t> b, kir::Type t = kir::Type::F32) {
    auto tl = heavy::choose_matmul_tiling(heavy::matmul_shape(a, b), t);
    return fmt::format("{}x{}x{}/{}x{}", tl.tile_m, tl.tile_n, tl.tile_k, tl.reg_m, tl.reg_n);
  };
  EXPECT_EQ(tile({8, 784}, {784, 120}), "16x16x16/1x1");
  EXPECT_EQ(tile({130, 70}, {70, 129}), "16x16x16/1x1");  // 9 blocks of 64: too few to fill a GPU
  EXPECT_EQ(tile({2, 300, 70}, {70, 270}), "64x64x16/4x4");
  EXPECT_EQ(tile({8192, 10}, {10, 84}), "64x32x16/4x2");    // 84 columns: 96 in 32-wide blocks, 128 in 64-wide ones
  EXPECT_EQ(tile({8192, 84}, {84, 120}), "64x64x16/4x4");   // 120: 128 either way
  EXPECT_EQ(tile({8, 300, 33}, {33, 700}), "128x128x8/8x8");
  EXPECT_EQ(tile({8, 300, 33}, {33, 700}, kir::Type::F64), "128x128x4/8x8");
  EXPECT_EQ(tile({2048, 2048}, {2048, 2048}), "128x128x8/8x8");
  // On GPUs other than through PTX a short K takes 64x64 blocks; a long one and PTX keep 128x128.
  auto on = [](std::vector<int64_t> a, std::vector<int64_t> b, heavy::Limits limits) {
    auto tl = heavy::choose_matmul_tiling(heavy::matmul_shape(a, b), kir::Type::F32, limits);
    return fmt::format("{}x{}x{}/{}x{}", tl.tile_m, tl.tile_n, tl.tile_k, tl.reg_m, tl.reg_n);
  };
  heavy::Limits vulkan{48 * 1024, 1024}, ptx = vulkan, cpu = vulkan;
  ptx.ptx = true;
  cpu.cpu = true;
  EXPECT_EQ(on({8192, 120}, {120, 784}, vulkan), "64x64x16/4x4");  // LeNet's first layer's input gradient
  EXPECT_EQ(on({8192, 120}, {120, 784}, ptx), "128x128x8/8x8");
  // CPUs: 8x8 per invocation in 64x64 blocks, 16 deep (8 in f64), at any size of 32 or more, K unsplit; 16x16 below
  // (LeNet's last layer).
  EXPECT_EQ(on({8192, 120}, {120, 784}, cpu), "64x64x16/8x8");
  EXPECT_EQ(on({64, 784}, {784, 120}, cpu), "64x64x16/8x8");  // LeNet's fc1 at batch 64
  const auto f64 = heavy::choose_matmul_tiling(heavy::matmul_shape({64, 784}, {784, 120}), kir::Type::F64, cpu);
  EXPECT_EQ(fmt::format("{}x{}x{}/{}x{}", f64.tile_m, f64.tile_n, f64.tile_k, f64.reg_m, f64.reg_n), "64x64x8/8x8");
  EXPECT_EQ(tile({64, 784}, {784, 120}), "16x16x16/1x1");  // the GPU heuristic: 2 blocks of 64 are too few for a GPU
  EXPECT_EQ(on({64, 84}, {84, 10}, cpu), "16x16x16/1x1");
  EXPECT_EQ(heavy::choose_matmul_tiling(heavy::matmul_shape({64, 8192}, {8192, 64}), kir::Type::F32, cpu).splits, 1u);
  EXPECT_EQ(on({2048, 2048}, {2048, 2048}, vulkan), "128x128x8/8x8");
}

TEST(TemplateShapes, BroadcastBatchStrides) {
  auto s = heavy::matmul_shape({2, 1, 5, 3}, {4, 3, 6});
  EXPECT_EQ(s.batch, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(s.a_batch_strides, (std::vector<int64_t>{15, 0}));
  EXPECT_EQ(s.b_batch_strides, (std::vector<int64_t>{0, 18}));
  EXPECT_EQ(s.m, 5);
  EXPECT_EQ(s.k, 3);
  EXPECT_EQ(s.n, 6);
}

// A message that contains `needle`, or a failure naming what was thrown instead.
template <class E, class F>
void expect_throw_with(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "nothing thrown; expected a message containing '" << needle << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TemplateShapes, RefuseWhatTheyCannotCompute) {
  expect_throw_with<std::invalid_argument>([] { heavy::matmul_shape({2, 3}, {4, 5}); }, "inner dimensions differ");
  expect_throw_with<std::invalid_argument>([] { heavy::matmul_shape({2, 2, 3}, {3, 3, 5}); }, "do not broadcast");
  expect_throw_with<std::invalid_argument>([] { heavy::matmul_shape({3}, {3, 5}); }, "rank >= 2");
  expect_throw_with<std::invalid_argument>(
      [] { heavy::conv2d_shape({1, 3, 8, 8}, {4, 2, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 2); }, "groups=2");
  expect_throw_with<std::invalid_argument>(
      [] { heavy::conv2d_shape({1, 1, 2, 2}, {1, 1, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1); }, "does not fit");
  expect_throw_with<std::invalid_argument>([] { heavy::pool2d_shape({1, 1, 8, 8}, {2, 2}, {2, 2}, {2, 2}); }, "half the kernel");
  expect_throw_with<std::invalid_argument>([] { heavy::softmax_shape({4, 5}, 2); }, "out of range");
  expect_throw_with<std::invalid_argument>([] { heavy::cross_entropy_kernel(4, 5, kir::Type::I32); }, "f32 or f64");
  expect_throw_with<std::invalid_argument>(
      [] { heavy::matmul_kernel(heavy::matmul_shape({70000, 40000}, {40000, 1}), kir::Type::F32); }, "2^31");
}

// A LoweringContext that records what a lowering asks for, without a device.
class RecordingContext final : public lowering::LoweringContext {
 public:
  explicit RecordingContext(const graph::Graph& g) : g_(g) {}
  const graph::Graph& graph() const override { return g_; }
  const rt::DeviceInfo& device() const override { return info_; }  // heavy templates do not read it
  rt::DeviceInfo info_;
  int32_t buffer_of(graph::Value v) override {
    auto [it, added] = slots.emplace(v.id, int32_t(slots.size()));
    return it->second;
  }
  void alias(graph::Value, graph::Value) override { ADD_FAILURE() << "a heavy op aliased a buffer"; }
  int32_t scratch(kir::Type, int64_t) override { return -1; }
  void launch(kir::Kernel kernel, std::vector<int32_t> buffers, rt::ScalarArgs scalars, uint64_t groups) override {
    launches.push_back({std::move(kernel), std::move(buffers), groups});
  }
  struct Recorded {
    kir::Kernel kernel;
    std::vector<int32_t> buffers;
    uint64_t groups;
  };
  std::map<int32_t, int32_t> slots;
  std::vector<Recorded> launches;

 private:
  const graph::Graph& g_;
};

TEST(HeavyLowering, BindsInputsThenResult) {
  graph::Graph g;
  auto x = g.input("x", graph::DType::F32, {8, 1, 28, 28});
  auto w = g.input("w", graph::DType::F32, {6, 1, 5, 5});
  auto y = g.conv2d(x, w, {.padding = {2, 2}});
  RecordingContext ctx(g);
  lowering::lower_node(ctx, y);
  ASSERT_EQ(ctx.launches.size(), 1u);
  const auto& l = ctx.launches[0];
  EXPECT_EQ(l.buffers, (std::vector<int32_t>{ctx.slots.at(x.id), ctx.slots.at(w.id), ctx.slots.at(y.id)}));
  EXPECT_EQ(l.kernel.buffers.size(), 3u);
  EXPECT_EQ(l.kernel.buffers[2].access, kir::Access::Write);
  EXPECT_GE(l.groups * l.kernel.workgroup_invocations(), uint64_t(8 * 6 * 28));  // one invocation per output row
}

// A long weight-gradient sum is split: partial sums into a scratch buffer, then a second launch adds them.
TEST(HeavyLowering, SplitWeightGradientGoesThroughScratch) {
  graph::Graph g;
  auto gy = g.input("gy", graph::DType::F32, {64, 6, 28, 28});
  auto x = g.input("x", graph::DType::F32, {64, 1, 28, 28});
  auto gw = g.conv2d_grad_weight(gy, x, {.padding = {2, 2}}, {6, 1, 5, 5});
  RecordingContext ctx(g);
  lowering::lower_node(ctx, gw);
  auto s = heavy::conv2d_shape({64, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1);
  ASSERT_GT(heavy::conv2d_grad_weight_splits(s, kir::Type::F32), 1u);
  ASSERT_EQ(ctx.launches.size(), 2u);
  const int32_t scratch = -1;  // what RecordingContext::scratch hands out
  EXPECT_EQ(ctx.launches[0].buffers, (std::vector<int32_t>{ctx.slots.at(gy.id), ctx.slots.at(x.id), scratch}));
  EXPECT_EQ(ctx.launches[1].buffers, (std::vector<int32_t>{scratch, ctx.slots.at(gw.id)}));
  EXPECT_GE(ctx.launches[1].groups * ctx.launches[1].kernel.workgroup_invocations(), 6u * 25u);
}

TEST(HeavyLowering, LabelsAreI32OnTheDevice) {
  graph::Graph g;
  auto logits = g.input("logits", graph::DType::F32, {8, 10});
  auto labels = g.input("labels", graph::DType::I64, {8});
  auto loss = cross_entropy(g, logits, labels);
  RecordingContext ctx(g);
  lowering::lower_node(ctx, loss);
  ASSERT_EQ(ctx.launches.size(), 1u);
  EXPECT_EQ(ctx.launches[0].kernel.buffers[1].elem, kir::Type::I32);
  EXPECT_EQ(ctx.launches[0].groups, 1u);
}

TEST(HeavyLowering, EmptyResultLaunchesNothing) {
  graph::Graph g;
  auto y = g.matmul(g.input("a", graph::DType::F32, {0, 5}), g.input("b", graph::DType::F32, {5, 3}));
  RecordingContext ctx(g);
  lowering::lower_node(ctx, y);
  EXPECT_TRUE(ctx.launches.empty());
}

TEST(HeavyLowering, RefusalNamesTheNodeAndAllocatesNothing) {
  graph::Graph g;
  auto x = g.input("x", graph::DType::F32, {70000, 1, 200, 200});
  auto w = g.input("w", graph::DType::F32, {1, 1, 3, 3});
  auto y = g.name(g.conv2d(x, w), "huge_conv");
  RecordingContext ctx(g);
  expect_throw_with<graph::GraphError>([&] { lowering::lower_node(ctx, y); }, "conv2d 'huge_conv'");
  EXPECT_TRUE(ctx.slots.empty());
  EXPECT_TRUE(ctx.launches.empty());
}

}  // namespace
}  // namespace templates_test
