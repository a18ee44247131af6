// Every candidate config of every tunable template computes the right result: each case's graph is compiled
// once per candidate of its tunable node (the candidate given to lowering as the tuning choice) on every
// device present and compared with the float64 evaluator under the op's tolerance (op_table.h, the op
// harness's measure). The executor poisons every buffer with NaN before the first step, so an element a
// candidate fails to write fails the comparison.
#include <gtest/gtest.h>

#include <cstdlib>

#include <functional>

#include <fmt/format.h>

#include "ir/graph/evaluator.h"
#include "ir/graph/op_table.h"
#include "lowering/executable.h"
#include "lowering/tunable_ops.h"
#include "op_harness/op_harness.h"
#include "tests/support/sweep_sample.h"
#include "tests/tuning/tuning_test_util.h"
#include "tests/support/named_ops.h"

using namespace spire;
using graph::DType;
using graph::Graph;
using tuning_test::random_tensor;

namespace {

struct Case {
  std::string name;
  std::function<Graph()> build;                                 // output "y"
  std::function<std::map<std::string, graph::Tensor>()> inputs;  // by input name
};

std::map<std::string, graph::Tensor> randoms(const Graph& g, uint64_t seed) {
  std::map<std::string, graph::Tensor> in;
  for (graph::Value v : g.inputs()) in[g.node(v).name] = random_tensor(g.type(v).dtype, g.type(v).shape, seed++);
  return in;
}

// A case whose inputs are all uniform in [-1, 1] (integers in [-3, 3]).
Case uniform(std::string name, std::function<Graph()> build) {
  return Case{name, build, [build] { return randoms(build(), 7); }};
}

Graph matmul(std::vector<int64_t> a, std::vector<int64_t> b, DType t = DType::F32) {
  Graph g;
  g.output("y", g.matmul(g.input("a", t, a), g.input("b", t, b)));
  return g;
}

Graph conv(std::vector<int64_t> x, std::vector<int64_t> w, graph::Conv2dOptions o, DType t = DType::F32) {
  Graph g;
  g.output("y", g.conv2d(g.input("x", t, x), g.input("w", t, w), o));
  return g;
}

// The gradients on their own, with grad_out of the forward result's shape.
Graph conv_grad_input(std::vector<int64_t> x, std::vector<int64_t> w, graph::Conv2dOptions o) {
  Graph probe;
  auto y = probe.conv2d(probe.input("x", DType::F32, x), probe.input("w", DType::F32, w), o);
  Graph g;
  g.output("y", g.conv2d_grad_input(g.input("gy", DType::F32, probe.type(y).shape), g.input("w", DType::F32, w), o, x));
  return g;
}

Graph conv_grad_weight(std::vector<int64_t> x, std::vector<int64_t> w, graph::Conv2dOptions o) {
  Graph probe;
  auto y = probe.conv2d(probe.input("x", DType::F32, x), probe.input("w", DType::F32, w), o);
  Graph g;
  g.output("y", g.conv2d_grad_weight(g.input("gy", DType::F32, probe.type(y).shape), g.input("x", DType::F32, x), o, w));
  return g;
}

Graph unary(std::vector<int64_t> shape, DType t, const std::function<graph::Value(Graph&, graph::Value)>& op) {
  Graph g;
  g.output("y", op(g, g.input("x", t, shape)));
  return g;
}

Case cross_entropy_case(std::string name, int64_t n, int64_t c, bool grad) {
  auto build = [=] {
    Graph g;
    auto logits = g.input("logits", DType::F32, {n, c});
    auto labels = g.input("labels", DType::I64, {n});
    if (grad) g.output("y", cross_entropy_grad(g, g.input("gy", DType::F32, {}), logits, labels));
    else g.output("y", cross_entropy(g, logits, labels));
    return g;
  };
  return Case{name, build, [=] {
                std::map<std::string, graph::Tensor> in{{"logits", random_tensor(DType::F32, {n, c}, 3, -3, 3)},
                                                        {"labels", random_tensor(DType::I64, {n}, 4, 0, double(c - 1))}};
                if (grad) in["gy"] = graph::Tensor::scalar(DType::F32, 0.75);
                return in;
              }};
}

std::vector<Case> cases() {
  using O = graph::Conv2dOptions;
  return {
      uniform("matmul_130x70x129", [] { return matmul({130, 70}, {70, 129}); }),
      uniform("matmul_batched_broadcast", [] { return matmul({2, 33, 17}, {17, 40}); }),
      uniform("matmul_f64", [] { return matmul({33, 20}, {20, 17}, DType::F64); }),
      // Both operands transposes the product reads in place (lowering/fuse.h, absorbed_transpose), and a batched
      // product whose 2D right operand is one.
      uniform("matmul_transposed_operands", [] {
        Graph g;
        g.output("y", g.matmul(g.transpose(g.input("a", DType::F32, {70, 130})), g.transpose(g.input("b", DType::F32, {129, 70}))));
        return g;
      }),
      uniform("matmul_batched_transposed_b", [] {
        Graph g;
        g.output("y", g.matmul(g.input("a", DType::F32, {2, 33, 17}), g.transpose(g.input("b", DType::F32, {40, 17}))));
        return g;
      }),
      // A long K with few blocks: the split-K configs (partial sums, then a second launch adds them), on a weight
      // gradient's shape (A read transposed).
      uniform("matmul_long_k_split", [] {
        Graph g;
        g.output("y", g.matmul(g.transpose(g.input("a", DType::F32, {2304, 20})), g.input("b", DType::F32, {2304, 24})));
        return g;
      }),
      uniform("conv2d_pad1", [] { return conv({2, 3, 9, 11}, {4, 3, 3, 3}, O{.padding = {1, 1}}); }),
      uniform("conv2d_groups_stride2", [] { return conv({2, 4, 9, 10}, {4, 2, 3, 3}, O{.stride = {2, 2}, .padding = {1, 1}, .groups = 2}); }),
      uniform("conv2d_long_rows", [] { return conv({1, 2, 5, 40}, {4, 2, 3, 3}, O{}); }),
      uniform("conv2d_f64", [] { return conv({1, 2, 6, 6}, {2, 2, 3, 3}, O{.padding = {1, 1}}, DType::F64); }),
      // Large enough for the implicit GEMM's 64- and 128-wide blocks (70 channels, 2 x 9 x 15 positions), with
      // every index path of its im2col gather: stride, padding and dilation differing per axis.
      uniform("conv2d_gemm_mixed_axes", [] { return conv({2, 5, 17, 15}, {70, 5, 3, 2}, O{.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}}); }),
      // resnet's downsampling: a 1x1 window at stride 2.
      uniform("conv2d_gemm_1x1_stride2", [] { return conv({3, 16, 14, 14}, {40, 16, 1, 1}, O{.stride = {2, 2}}); }),
      // Weights staged by 16-byte reads (108 taps: whole fours, no whole slices; 64 channels: whole 64-row blocks).
      uniform("conv2d_gemm_vector_weights", [] { return conv({2, 12, 10, 10}, {64, 12, 3, 3}, O{.padding = {1, 1}}); }),
      // Winograd's F(2x2, 3x3) (and the direct forms): an odd output on both axes (tiles over the edges), channels
      // that are no multiple of 4; and no padding with channels that are.
      uniform("conv2d_winograd_odd_edges", [] { return conv({2, 13, 9, 11}, {33, 13, 3, 3}, O{.padding = {1, 1}}); }),
      uniform("conv2d_winograd_unpadded", [] { return conv({1, 8, 10, 8}, {16, 8, 3, 3}, O{}); }),
      // The input gradient of a 3x3 stride-1 convolution by Winograd too (a forward convolution of grad_y with the
      // windows turned and padding 2 - p): odd sizes with padding 1, and no padding.
      uniform("conv2d_grad_input_winograd_pad1", [] { return conv_grad_input({2, 33, 9, 11}, {13, 33, 3, 3}, O{.padding = {1, 1}}); }),
      uniform("conv2d_grad_input_winograd_unpadded", [] { return conv_grad_input({1, 16, 10, 9}, {8, 16, 3, 3}, O{}); }),
      // Weights in workgroup memory (shared_w) for 6 output channels: a partial group of four, a 5x5 window as LeNet's.
      uniform("conv2d_shared_weights", [] { return conv({3, 2, 9, 7}, {6, 2, 5, 5}, O{.padding = {2, 2}}); }),
      // Enough elements that several per invocation (pixels) take every pass and leave a ragged last workgroup.
      uniform("conv2d_shared_weights_many_elements", [] { return conv({9, 1, 28, 27}, {6, 1, 5, 5}, O{.padding = {2, 2}}); }),
      // Whole images staged with every weight (images): LeNet's second convolution over 5 images, one or two per
      // workgroup (a ragged last workgroup).
      uniform("conv2d_images", [] { return conv({5, 6, 14, 14}, {16, 6, 5, 5}, O{.padding = {2, 2}}); }),
      // Whole images staged, strips of elements of every output channel per invocation (images with rows=0): LeNet's
      // first convolution over 5 images (one, two or four per workgroup: ragged last workgroups), and 2 -> 3 channels
      // with a 3x5 window over 9x11 outputs (strips reaching past the last row, channels not a multiple of four).
      uniform("conv2d_image_strips", [] { return conv({5, 1, 28, 28}, {6, 1, 5, 5}, O{.padding = {2, 2}}); }),
      uniform("conv2d_image_strips_ragged", [] { return conv({3, 2, 9, 11}, {3, 2, 3, 5}, O{.padding = {1, 2}}); }),
      // The input gradient the same way (grad_y staged, the weights turned around), on LeNet's second convolution.
      uniform("conv2d_grad_input_images", [] { return conv_grad_input({5, 6, 14, 14}, {16, 6, 5, 5}, O{.padding = {2, 2}}); }),
      uniform("conv2d_grad_input_pad1", [] { return conv_grad_input({2, 3, 9, 11}, {4, 3, 3, 3}, O{.padding = {1, 1}}); }),
      uniform("conv2d_grad_input_stride2", [] { return conv_grad_input({1, 3, 10, 9}, {2, 3, 3, 3}, O{.stride = {2, 2}, .padding = {1, 1}}); }),
      uniform("conv2d_grad_input_groups", [] { return conv_grad_input({2, 4, 9, 10}, {4, 2, 3, 3}, O{.padding = {1, 1}, .groups = 2}); }),
      // The GEMM forms of the gradients: 70 input channels for the input gradient's rows, every stride/padding/
      // dilation path of its exact-division gather, and a 1x1 stride-2 window (3 of 4 positions get nothing).
      uniform("conv2d_grad_input_gemm_mixed_axes", [] { return conv_grad_input({2, 70, 9, 11}, {6, 70, 3, 2}, O{.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}}); }),
      uniform("conv2d_grad_input_gemm_1x1_stride2", [] { return conv_grad_input({2, 40, 14, 14}, {16, 40, 1, 1}, O{.stride = {2, 2}}); }),
      // Strided input gradients by phases (conv2d_grad_input_phases_kernel): odd sizes (phases of unequal rows and
      // columns), strides and windows differing per axis (phases of 1 to 3 tap rows), and a window smaller than the
      // stride (phases no tap reaches, all zeros).
      uniform("conv2d_grad_input_phases_3x3", [] { return conv_grad_input({2, 20, 11, 9}, {24, 20, 3, 3}, O{.stride = {2, 2}, .padding = {1, 1}}); }),
      uniform("conv2d_grad_input_phases_7x5", [] { return conv_grad_input({1, 6, 16, 13}, {8, 6, 7, 5}, O{.stride = {3, 2}, .padding = {3, 2}}); }),
      uniform("conv2d_grad_input_phases_gaps", [] { return conv_grad_input({2, 5, 10, 11}, {3, 5, 2, 2}, O{.stride = {3, 3}}); }),
      // The same with windows long enough for split-K (partial sums of every phase, one launch adding them): phases of
      // unequal K (some splits' ranges miss the short ones: they store zeros), and phases no tap reaches.
      uniform("conv2d_grad_input_phases_split_7x5", [] { return conv_grad_input({1, 6, 16, 13}, {32, 6, 7, 5}, O{.stride = {3, 2}, .padding = {3, 2}}); }),
      uniform("conv2d_grad_input_phases_split_gaps", [] { return conv_grad_input({1, 8, 10, 11}, {256, 8, 2, 2}, O{.stride = {3, 3}}); }),
      // 70 x 144 weights over 198 positions: split-K with partial sums for the shallow slices, one split for the deep.
      uniform("conv2d_grad_weight_gemm_split", [] { return conv_grad_weight({3, 16, 12, 13}, {70, 16, 3, 3}, O{.stride = {2, 1}, .padding = {1, 1}, .dilation = {1, 2}}); }),
      // One block over a long K (7442 positions; resnet18's first layer at batch 64: 3 blocks over 802816): the GEMM
      // split up to 116 ways, 4 slices each.
      uniform("conv2d_grad_weight_gemm_many_splits", [] { return conv_grad_weight({2, 4, 64, 64}, {64, 4, 4, 4}, O{}); }),
      uniform("conv2d_grad_weight_3x3", [] { return conv_grad_weight({4, 3, 16, 16}, {5, 3, 3, 3}, O{.padding = {1, 1}}); }),
      // The weight gradient by Winograd (3x3 at stride 1): odd outputs on both axes (grad_y's tiles over the edges read
      // zeros), padding 2 on one axis and none on the other, and 684 tiles: the product split over them (1, 2, 4 ways).
      uniform("conv2d_grad_weight_winograd_odd_edges", [] { return conv_grad_weight({2, 5, 9, 11}, {7, 5, 3, 3}, O{.padding = {1, 1}}); }),
      uniform("conv2d_grad_weight_winograd_pad2", [] { return conv_grad_weight({1, 4, 7, 6}, {6, 4, 3, 3}, O{.padding = {2, 0}}); }),
      uniform("conv2d_grad_weight_winograd_split", [] { return conv_grad_weight({2, 3, 40, 38}, {5, 3, 3, 3}, O{}); }),
      uniform("conv2d_grad_weight_5x5", [] { return conv_grad_weight({2, 2, 12, 12}, {3, 2, 5, 5}, O{.padding = {2, 2}}); }),
      // Several output channels per workgroup (co_block 2 and 4): LeNet's 5x5 window with padding, and groups.
      uniform("conv2d_grad_weight_channel_blocks", [] { return conv_grad_weight({3, 3, 10, 9}, {8, 3, 5, 5}, O{.padding = {2, 2}}); }),
      uniform("conv2d_grad_weight_channel_blocks_groups", [] { return conv_grad_weight({2, 4, 10, 9}, {8, 2, 3, 3}, O{.padding = {1, 1}, .groups = 2}); }),
      // Every weight in one workgroup (all_pairs): LeNet's second convolution over 5 images, 1, 2 and more splits.
      uniform("conv2d_grad_weight_all_pairs", [] { return conv_grad_weight({5, 6, 14, 14}, {16, 6, 5, 5}, O{.padding = {2, 2}}); }),
      // ... with each owner's rows split among invocations (row_split): LeNet's first convolution's channels and window
      // over 5 images of 16x16, and 2 -> 3 channels with a 3x5 window over 9x11 outputs (row groups of unequal length).
      uniform("conv2d_grad_weight_row_split", [] { return conv_grad_weight({5, 1, 16, 16}, {6, 1, 5, 5}, O{.padding = {2, 2}}); }),
      uniform("conv2d_grad_weight_row_split_ragged", [] { return conv_grad_weight({3, 2, 9, 11}, {3, 2, 3, 5}, O{.padding = {1, 2}}); }),
      uniform("conv2d_grad_weight_long_rows", [] { return conv_grad_weight({1, 2, 4, 40}, {2, 2, 3, 3}, O{}); }),
      // Row mode staged through workgroup memory (whole images per step) with strides, dilation and a ragged last
      // step of images; and 7x5 windows, whose tap rows split into a ragged last block.
      uniform("conv2d_grad_weight_staged_strided", [] { return conv_grad_weight({5, 2, 11, 13}, {4, 2, 3, 3}, O{.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}}); }),
      uniform("conv2d_grad_weight_staged_ragged_taps", [] { return conv_grad_weight({5, 1, 12, 10}, {2, 1, 7, 5}, O{.padding = {3, 2}}); }),
      uniform("sum_axis0", [] { return unary({300, 7}, DType::F32, [](Graph& g, graph::Value x) { return g.sum(x, {0}); }); }),
      uniform("max_axis1", [] { return unary({5, 300}, DType::F32, [](Graph& g, graph::Value x) { return g.max(x, {1}); }); }),
      uniform("sum_all_split", [] { return unary({40000}, DType::F32, [](Graph& g, graph::Value x) { return g.sum(x); }); }),
      uniform("sum_to", [] { return unary({30, 4, 5}, DType::F32, [](Graph& g, graph::Value x) { return g.sum_to(x, {1, 4, 1}); }); }),
      // Rows of outputs side by side (the rows template: whole rows per workgroup, chunks of rows), as a bias gradient's
      // sum over a batch; 300 outputs take two column blocks of 256; max over rows too.
      uniform("sum_rows", [] { return unary({2500, 120}, DType::F32, [](Graph& g, graph::Value x) { return g.sum_to(x, {120}); }); }),
      uniform("sum_rows_wide", [] { return unary({3, 40, 300}, DType::F32, [](Graph& g, graph::Value x) { return g.sum(x, {0, 1}); }); }),
      uniform("max_rows", [] { return unary({700, 33}, DType::F32, [](Graph& g, graph::Value x) { return g.max(x, {0}); }); }),
      uniform("sum_i32", [] { return unary({50, 3}, DType::I32, [](Graph& g, graph::Value x) { return g.sum(x, {0}); }); }),
      uniform("softmax_long_rows", [] { return unary({4, 300}, DType::F32, [](Graph& g, graph::Value x) { return softmax(g, x, 1); }); }),
      uniform("log_softmax_inner", [] { return unary({3, 7, 5}, DType::F32, [](Graph& g, graph::Value x) { return log_softmax(g, x, 1); }); }),
      uniform("softmax_f64", [] { return unary({6, 33}, DType::F64, [](Graph& g, graph::Value x) { return softmax(g, x, 1); }); }),
      cross_entropy_case("cross_entropy", 37, 10, false),
      cross_entropy_case("cross_entropy_split", 2500, 10, false),  // split over workgroups, then combined
      cross_entropy_case("cross_entropy_grad_long_rows", 9, 300, true),
      cross_entropy_case("cross_entropy_grad", 37, 10, true),
  };
}

std::vector<std::string> case_names() {
  std::vector<std::string> out;
  for (const Case& c : cases()) out.push_back(c.name);
  return out;
}

using testing_support::sampled;  // a representative subset unless SPIRE_FULL_SWEEPS=1 (tests/support/sweep_sample.h)

class EveryCandidate : public testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  void SetUp() override {
    dev_ = rt::open_device(std::get<0>(GetParam()));
    messages_before_ = rt::vulkan::validation_message_count();
  }
  void TearDown() override {
    EXPECT_EQ(rt::vulkan::validation_message_count(), messages_before_) << "the Vulkan validation layer reported messages";
  }
  std::unique_ptr<rt::Device> dev_;
  uint64_t messages_before_ = 0;
};

TEST_P(EveryCandidate, MatchesTheReference) {
  Case c;
  for (Case& k : cases())
    if (k.name == std::get<1>(GetParam())) c = k;
  const Graph g = c.build();
  for (graph::Value v : g.values())
    if (g.type(v).dtype == DType::F64 && !dev_->info().features.has(kir::Feature::Float64))
      GTEST_SKIP() << dev_->info().id << " has no float64";
  const auto inputs = c.inputs();
  const graph::Tensor want = graph::evaluate(g, inputs, DType::F64).at("y");
  const graph::Node& node = g.node(g.outputs().at(0).value);
  const double tol = graph::op_tolerance(node.op, false, want.dtype);
  const auto ops = lowering::tunable_ops(g, dev_->info());
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_GT(ops[0].candidates.size(), 1u) << "a tunable template with one candidate tunes nothing";
  for (const auto& config : sampled(ops[0].candidates)) {
    lowering::MapTuningChoices choices;
    choices.configs[ops[0].key] = config;
    auto exe = lowering::compile(g, *dev_, {.tuning = &choices});
    for (const auto& [name, t] : inputs) exe->set(name, t);
    exe->step();
    const double err = harness::max_norm_error(exe->get("y"), want);
    EXPECT_LE(err, tol) << ops[0].key.text() << " with " << config.text();
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, EveryCandidate,
                         testing::Combine(testing::ValuesIn(lowering::testing_support::device_ids()),
                                          testing::ValuesIn(case_names())),
                         [](const auto& info) {
                           return lowering::testing_support::test_name(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EveryCandidate);

}  // namespace
