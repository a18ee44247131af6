// Gathered prologues (lowering/fuse.h): a convolution's weight gradient whose grad_out is a max pooling's gradient
// (maybe under the ReLU's mask), read by nothing else, computes it from the pooled gradient and the pooling's input,
// and the pooling gradient gets no launch of its own (lower_conv2d.cpp's pooled form: the all_pairs kernels stage
// grad_y window by window; the other configs run the pooling gradient into a scratch buffer first). Checked: where the
// plan takes it and where not (on an H100-like target), and the weight gradient of every config against the float64
// evaluator on every device present, on inputs whose windows hold ties (the first maximum takes the gradient) and
// ReLU zeros.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "frontend/lenet.h"
#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "kernels/pool2d_kernels.h"
#include "lowering/fuse.h"
#include "lowering/plan.h"
#include "passes/canonical.h"
#include "lowering/tunable.h"
#include "lowering/tunable_ops.h"
#include "tests/lowering/device_list.h"
#include "tests/lowering/forced_config.h"
#include "tests/lowering/plan_queries.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/on_device.h"
#include "tests/support/random_tensor.h"

namespace gathered_prologue_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Tensor;
using graph::Value;

namespace {


struct PoolCase {
  graph::Pool2dOptions pool{{2, 2}, {2, 2}, {0, 0}};
  bool relu = true;
  bool grad_out_also_output = false;
};

// y = relu(conv2d(x, w)) (or without the ReLU), and the weight gradient of a loss whose gradient at max_pool2d(y) is
// the input gp: conv2d_grad_weight(relu_grad(max_pool2d_grad(gp, y), y), x), as autograd writes it.
Graph pooled_weight_gradient(const PoolCase& c) {
  Graph g;
  const graph::Conv2dOptions conv{.padding = {1, 1}};
  Value x = g.input("x", DType::F32, {3, 2, 8, 8});
  Value w = g.input("w", DType::F32, {4, 2, 3, 3});
  Value pre = g.conv2d(x, w, conv);
  Value y = c.relu ? g.relu(pre) : pre;
  const int64_t ho = (8 + 2 * c.pool.padding[0] - c.pool.kernel[0]) / c.pool.stride[0] + 1;
  const int64_t wo = (8 + 2 * c.pool.padding[1] - c.pool.kernel[1]) / c.pool.stride[1] + 1;
  Value gp = g.input("gp", DType::F32, {3, 4, ho, wo});
  Value grad = g.max_pool2d_grad(gp, y, c.pool);
  if (c.relu) grad = g.relu_grad(grad, y);
  g.output("grad_w", g.conv2d_grad_weight(grad, x, conv, {4, 2, 3, 3}));
  if (c.grad_out_also_output) g.output("grad_y", grad);
  return g;
}

// The value conv2d_grad_weight reads and the plan's fusion, as lowering sees the graph.
struct Planned {
  Graph g;
  lowering::Fusion f;
  Value conv, grad_out;
};

Planned plan_of(const Graph& original) {
  auto [g, f] = lowering::testing_support::fusion_of(original);
  const Value conv = lowering::testing_support::last_node_of(g, OpKind::Conv2dGradWeight);
  const Value grad_out = g.node(conv).inputs[0];
  return {std::move(g), std::move(f), conv, grad_out};
}

using lowering::testing_support::count_prefix;
using lowering::testing_support::kernels_of;
using lowering::testing_support::node_launched;

TEST(GatheredProloguePlan, TheWeightGradientComputesThePoolingGradientUnderTheReluMask) {
  const Graph g = pooled_weight_gradient({});
  const Planned p = plan_of(g);
  ASSERT_EQ(p.g.node(p.grad_out).op, OpKind::ReluGrad);
  EXPECT_EQ(p.f.prologue[size_t(p.conv.id)], p.grad_out.id);
  const Value pool = p.g.node(p.grad_out).inputs[0];
  EXPECT_TRUE(p.f.fused[size_t(p.grad_out.id)]);
  EXPECT_TRUE(p.f.fused[size_t(pool.id)]);
  EXPECT_EQ(p.f.epilogue[size_t(pool.id)], -1);
  EXPECT_FALSE(p.f.is_epilogue[size_t(p.grad_out.id)]);
  // At this batch the heuristic is a row kernel: the weight gradient's own launches run the masked pooling gradient
  // into a scratch buffer first; neither the pooling gradient nor the mask is a node of its own any more.
  const lowering::Plan plan = lowering::lower(g, testing_support::h100_like_target());
  const std::vector<std::string> kernels = kernels_of(plan);
  const auto mask = std::find_if(kernels.begin(), kernels.end(),
                                 [](const std::string& k) { return k.rfind("max_pool2d_grad", 0) == 0; });
  ASSERT_NE(mask, kernels.end());
  EXPECT_NE(mask->find("_relu_mask"), std::string::npos) << *mask;
  ASSERT_NE(mask + 1, kernels.end());
  EXPECT_EQ((mask + 1)->rfind("conv2d_grad_weight_n3_", 0), 0u) << *(mask + 1);
  EXPECT_EQ(count_prefix(kernels, "max_pool2d_grad"), 1);
  EXPECT_FALSE(node_launched(plan, p.g.node(pool).name));
  EXPECT_FALSE(node_launched(plan, p.g.node(p.grad_out).name));
}

TEST(GatheredProloguePlan, WithoutTheReluThePoolingGradientItselfIsComputed) {
  const Planned p = plan_of(pooled_weight_gradient({.relu = false}));
  ASSERT_EQ(p.g.node(p.grad_out).op, OpKind::MaxPool2dGrad);
  EXPECT_EQ(p.f.prologue[size_t(p.conv.id)], p.grad_out.id);
  EXPECT_TRUE(p.f.fused[size_t(p.grad_out.id)]);
}

TEST(GatheredProloguePlan, NotTakenForOverlappingWindowsOrAStoredGradient) {
  for (const PoolCase& c : {PoolCase{.pool = {{3, 3}, {2, 2}, {1, 1}}}, PoolCase{.grad_out_also_output = true}}) {
    const Graph g = pooled_weight_gradient(c);
    const Planned p = plan_of(g);
    EXPECT_EQ(p.f.prologue[size_t(p.conv.id)], -1);
    EXPECT_FALSE(p.f.fused[size_t(p.grad_out.id)]);
    const lowering::Plan plan = lowering::lower(g, testing_support::h100_like_target());
    EXPECT_TRUE(node_launched(plan, p.g.node(p.g.node(p.grad_out).inputs[0]).name));
  }
}

// The masked pooling gradient (the fallback configs' first launch) exists for windows that tile the input only, the
// only pooling the pooled form takes; elsewhere the kernel is refused by name.
TEST(GatheredProloguePlan, TheMaskedPoolingGradientNeedsTilingWindows) {
  namespace heavy = lowering::heavy;
  const heavy::Pool2dShape tiling = heavy::pool2d_shape({2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0});
  EXPECT_NE(heavy::max_pool2d_grad_kernel(tiling, kir::Type::F32, true).kernel.name.find("_relu_mask"),
            std::string::npos);
  const heavy::Pool2dShape overlapping = heavy::pool2d_shape({2, 3, 8, 8}, {3, 3}, {2, 2}, {1, 1});
  try {
    heavy::max_pool2d_grad_kernel(overlapping, kir::Type::F32, true);
    ADD_FAILURE() << "a masked gradient over overlapping windows was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tile"), std::string::npos) << e.what();
  }
}

// LeNet's step at batch 8192: the first convolution's weight gradient (all_pairs on a GPU) stages its pooling gradient
// window by window, with no pooling-gradient kernel; the second convolution's masked gradient is read by its input
// gradient too, so it stays one launch, stored. The pooled form's configs, measured per compiler (lower_conv2d.cpp):
// through ptxas one output channel per owner with 4 row groups in 512 splits, else the heuristic's row groups doubled.
TEST(GatheredProloguePlan, LeNetsFirstConvolutionStagesItsPoolingGradient) {
  nn::LeNetGraphOptions o;
  o.batch = 8192;
  const rt::DeviceInfo target = testing_support::h100_like_target();  // a CUDA device: PTX
  const std::vector<std::string> kernels = kernels_of(lowering::lower(nn::build_lenet_graph(o), target));
  // The second's pooling gradient (which also sums its bias gradient, then a launch adds the chunks' sums).
  EXPECT_EQ(count_prefix(kernels, "max_pool2d_grad_argmax_n8192"), 1);
  EXPECT_EQ(count_prefix(kernels, "max_pool2d_grad"), 2);
  int pooled = 0;
  for (const std::string& k : kernels)
    pooled += k.rfind("conv2d_grad_weight_n8192_c1_", 0) == 0 && k.find("_wg128_s512_all_pairs_co1_rs4_") != std::string::npos &&
              k.find("_pooled_k2x2_relu") != std::string::npos;
  EXPECT_EQ(pooled, 1);
  const Planned p = plan_of(nn::build_lenet_graph(o));
  int gathered = 0;
  for (Value v : p.g.values())
    if (p.f.prologue[size_t(v.id)] >= 0 && p.g.node(v).op == OpKind::Conv2dGradWeight) {
      lowering::heavy::Limits limits = lowering::limits_of(target);
      EXPECT_EQ(lowering::tunable_conv2d_grad_weight(p.g, v, limits, true).heuristic.text(),
                "block_rows=5,block_cols=5,wg=128,splits=512,row_mode=1,all_pairs=1,row_split=4");
      limits.ptx = false;  // SPIR-V for the same GPU
      EXPECT_EQ(lowering::tunable_conv2d_grad_weight(p.g, v, limits, true).heuristic.text(),
                "block_rows=5,block_cols=5,wg=448,splits=256,row_mode=1,co_block=2,all_pairs=1,row_split=28");
      ++gathered;
    }
  EXPECT_EQ(gathered, 1);
}

class GatheredPrologue : public testing_support::OnDevice {};

// Integer inputs and weights make ties in many windows, and the ReLU zeros whole windows: the first maximum of each
// window (PyTorch's rule) must take the gradient, as the float64 evaluator gives it. Every candidate config of the
// pooled form (all_pairs ones stage windows, the others run the pooling gradient first), with and without the mask.
TEST_P(GatheredPrologue, EveryConfigMatchesTheReferenceWithTiesAndZeros) {
  const lowering::heavy::Limits limits = lowering::limits_of(dev_->info());
  int all_pairs = 0;
  for (const PoolCase& c : {PoolCase{}, PoolCase{.relu = false}}) {
    const Graph g = pooled_weight_gradient(c);
    const Planned p = plan_of(g);
    const lowering::TunableOp op = lowering::tunable_conv2d_grad_weight(p.g, p.conv, limits, true);
    std::map<std::string, Tensor> in{{"x", testing_support::integer_tensor({3, 2, 8, 8}, 11, 0, 2)},
                                     {"w", testing_support::integer_tensor({4, 2, 3, 3}, 12, -1, 1)},
                                     {"gp", testing_support::uniform_tensor({3, 4, 4, 4}, 13, DType::F32)}};
    const Tensor want = graph::evaluate(g, in, DType::F64).at("grad_w");
    for (const lowering::heavy::Config& config : op.candidates) {
      all_pairs += config.has("all_pairs");
      auto exe = lowering::testing_support::compile_forced(g, *dev_, op.key, config, in);
      ASSERT_NE(exe->plan_text().find(config.has("all_pairs") ? "_pooled_k2x2" : "max_pool2d_grad_n3"), std::string::npos)
          << config.text();
      exe->step();
      const Tensor got = exe->get("grad_w");
      ASSERT_EQ(got.data.size(), want.data.size());
      for (size_t i = 0; i < want.data.size(); ++i)
        ASSERT_NEAR(got.data[i], want.data[i], 1e-5 * (1 + std::abs(want.data[i])))
            << "relu " << c.relu << ", config " << config.text() << ", element " << i;
    }
  }
  EXPECT_GT(all_pairs, 0) << "no staged (all_pairs) candidate was checked";
}

INSTANTIATE_TEST_SUITE_P(AllDevices, GatheredPrologue, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GatheredPrologue);

}  // namespace
}  // namespace gathered_prologue_test
