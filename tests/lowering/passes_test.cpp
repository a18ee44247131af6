// The passes on their own, without a device: decompose, schedule, lowering decisions (aliases, folded
// constants, deduplicated kernels) and memory planning.
#include <gtest/gtest.h>

#include <algorithm>

#include "passes/decompose.h"
#include "lowering/fuse.h"
#include "lowering/memory_plan.h"
#include "lowering/plan.h"
#include "lowering/schedule.h"
#include "tests/support/named_ops.h"

using namespace spire;
using graph::DType;

namespace {

rt::DeviceInfo fake_device(uint32_t alignment = 64) {
  rt::DeviceInfo d;
  d.id = "test:0";
  d.min_storage_offset_alignment = alignment;
  d.max_buffer_bytes = 1ull << 30;
  return d;
}

TEST(Decompose, MeanBecomesSumTimesReciprocalCount) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {4, 6});
  g.output("m", g.name(g.mean(x, {1}), "m"));
  graph::Graph d = passes::decompose(g);
  auto m = d.at("m");
  ASSERT_EQ(d.node(m).op, graph::OpKind::Mul);
  auto s = d.node(m).inputs[0], c = d.node(m).inputs[1];
  EXPECT_EQ(d.node(s).op, graph::OpKind::Sum);
  EXPECT_EQ(d.node(s).attrs.get_ints("axes"), std::vector<int64_t>{1});
  EXPECT_EQ(d.node(c).op, graph::OpKind::Constant);
  EXPECT_DOUBLE_EQ(d.node(c).attrs.get_float("value"), 1.0 / 6);
  EXPECT_EQ(d.type(m), g.type(g.at("m")));
  ASSERT_EQ(d.outputs().size(), 1u);
  EXPECT_EQ(d.outputs()[0].name, "m");
}

TEST(Decompose, KeepsLeavesOutputsAndStateUpdates) {
  graph::Graph g;
  auto w = g.parameter("w", DType::F32, {3});
  auto m = g.state("m", DType::F32, {3}, 0.5);
  auto nm = g.add(g.mul(m, 0.9), w);
  g.state_update(m, nm);
  g.state_update(w, g.sub(w, nm));
  g.output("sig", g.sigmoid(w));
  graph::Graph d = passes::decompose(g);
  EXPECT_EQ(d.size(), g.size());  // nothing to decompose here: sigmoid stays whole
  ASSERT_EQ(d.state_updates().size(), 2u);
  EXPECT_EQ(d.node(d.state_updates()[0].target).name, "m");
  EXPECT_DOUBLE_EQ(d.node(d.at("m")).attrs.get_float("init"), 0.5);
  EXPECT_EQ(d.node(d.outputs()[0].value).op, graph::OpKind::Sigmoid);
}

TEST(Schedule, DropsWhatNothingNeedsAndKeepsOrder) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {5});
  auto a = g.exp(x);
  auto unused = g.log(x);
  auto b = g.add(a, x);
  g.output("b", b);
  auto order = lowering::schedule(g);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], a);
  EXPECT_EQ(order[1], b);
  EXPECT_EQ(std::count(order.begin(), order.end(), unused), 0);
}

TEST(Lower, ReshapeAliasesAndScalarConstantsFold) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {4, 6});
  auto y = g.mul(g.reshape(x, {24}), 2.0);  // 2.0 becomes a folded constant
  g.output("y", y);
  auto plan = lowering::lower(g, fake_device());
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.kernels.size(), 1u);
  // x, y: no buffer for the reshape (it is x) nor for the constant.
  EXPECT_EQ(plan.buffers.size(), 2u);
  const auto& xb = plan.buffers[size_t(plan.leaves.at("x").buffer)];
  EXPECT_EQ(xb.values.size(), 2u) << "x and its reshape share one buffer";
  EXPECT_EQ(plan.kernels[0].buffers.size(), 2u) << "the constant is folded into the kernel";
}

TEST(Lower, IdenticalNodesShareOneKernel) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {33});
  auto y = g.input("y", DType::F32, {33});
  g.output("a", g.add(x, y));
  g.output("b", g.add(y, x));
  g.output("c", g.exp(x));
  g.output("d", g.exp(y));
  auto plan = lowering::lower(g, fake_device());
  EXPECT_EQ(plan.launches.size(), 4u);
  EXPECT_EQ(plan.kernels.size(), 2u);
}

TEST(Fuse, PointwiseChainsBecomeOneKernel) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {8, 33});
  auto w = g.parameter("w", DType::F32, {33});
  auto b = g.parameter("b", DType::F32, {33});
  auto h = g.relu(g.add(g.mul(x, w), b));  // mul and add fuse into relu: one launch, no intermediate buffer
  g.output("h", h);
  g.output("s", g.sum(g.exp(h), {1}));     // exp's user is a reduction: computed in the sum's loads (a prologue)
  auto plan = lowering::lower(g, fake_device());
  ASSERT_EQ(plan.launches.size(), 2u) << lowering::plan_text(plan);
  EXPECT_EQ(plan.kernels[size_t(plan.launches[0].kernel)].name, "relu_add_mul_f32_8x33_from_8x33_33_33");
  EXPECT_EQ(plan.launches[0].buffers.size(), 4u) << "out, x, w, b";
  // The sum reads h (its now unread input binding, then the exp tree's one leaf) and computes exp at each element.
  const std::string& sum = plan.kernels[size_t(plan.launches[1].kernel)].name;
  EXPECT_NE(sum.find("_exp"), std::string::npos) << sum;
  for (const auto& buf : plan.buffers)
    for (const auto& v : buf.values)
      EXPECT_TRUE(v.rfind("mul_", 0) != 0 && v.rfind("add_", 0) != 0 && v.rfind("exp_", 0) != 0) << v;
}

TEST(Fuse, ValuesThatMustLandInMemoryOrAreSharedAreNotFused) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {16});
  auto e = g.exp(x);
  g.output("e", e);                               // an output: stored
  auto n = g.neg(x);
  g.output("y", g.add(g.mul(n, n), g.log(x)));    // n used twice: stored; log fused into add
  auto small = g.input("s", DType::F32, {1});
  g.output("z", g.add(g.exp(small), x));          // exp(small) would be recomputed 16 times: stored
  auto fused = lowering::fuse_pointwise(g);
  EXPECT_FALSE(fused[size_t(e.id)]);
  EXPECT_FALSE(fused[size_t(n.id)]);
  EXPECT_TRUE(fused[size_t(g.node(g.outputs()[1].value).inputs[0].id)]) << "mul(n, n) fuses into the add";
  EXPECT_TRUE(fused[size_t(g.node(g.outputs()[1].value).inputs[1].id)]) << "log fuses into the add";
  EXPECT_FALSE(fused[size_t(g.node(g.outputs()[2].value).inputs[0].id)]);
}

TEST(Lower, StateUpdatesBecomeCopiesAndOutputsOfTargetsAreSnapshotted) {
  graph::Graph g;
  auto w = g.parameter("w", DType::F32, {8});
  auto x = g.input("x", DType::F32, {8});
  g.state_update(w, g.add(w, x));
  g.output("w_before", g.reshape(w, {2, 4}));  // lives in w's buffer: must be copied before the update
  auto plan = lowering::lower(g, fake_device());
  ASSERT_EQ(plan.copies.size(), 1u);
  EXPECT_EQ(plan.copies[0].to, plan.leaves.at("w").buffer);
  EXPECT_NE(plan.outputs.at("w_before").buffer, plan.leaves.at("w").buffer);
  EXPECT_EQ(plan.launches.size(), 2u);  // the add and the snapshot copy
}

TEST(MemoryPlan, ReusesDeadIntermediatesAndRespectsAlignment) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {20, 50});
  graph::Value v = x;
  // A chain that cannot fuse (exp feeds a permute): at most two intermediates are live at once.
  for (int i = 0; i < 10; ++i) v = g.permute(g.exp(v), {1, 0});
  g.output("y", v);
  auto plan = lowering::lower(g, fake_device(256));
  EXPECT_EQ(lowering::check_memory_plan(plan), "");
  uint64_t transient = 0;
  for (const auto& b : plan.buffers)
    if (!b.persistent()) transient += b.bytes();
  EXPECT_EQ(transient, 19u * 4000) << "19 intermediates, the last value is the output";
  EXPECT_LE(plan.arena_bytes, 2u * 4096) << "two live 4000-byte buffers, each rounded up to 256";
  EXPECT_EQ(plan.arena_alignment, 256u);
  for (const auto& b : plan.buffers)
    if (!b.persistent()) {
      EXPECT_EQ(b.arena_offset % 256, 0);
    }
}

TEST(MemoryPlan, CheckerCatchesOverlaps) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {8, 8});
  g.output("y", g.add(g.transpose(g.exp(x)), g.transpose(g.log(x))));  // both transposes are live at the add
  auto plan = lowering::lower(g, fake_device());
  ASSERT_EQ(lowering::check_memory_plan(plan), "");
  bool broke = false;
  for (size_t i = 0; i < plan.buffers.size() && !broke; ++i)
    for (size_t j = i + 1; j < plan.buffers.size() && !broke; ++j) {
      auto &a = plan.buffers[i], &b = plan.buffers[j];
      if (a.persistent() || b.persistent() || a.first_use > b.last_use || b.first_use > a.last_use) continue;
      b.arena_offset = a.arena_offset;  // two live buffers at one address
      broke = true;
    }
  ASSERT_TRUE(broke);
  EXPECT_NE(lowering::check_memory_plan(plan), "");
}

TEST(PlanText, NamesBuffersKernelsAndLaunches) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {7, 33});
  auto w = g.parameter("w", DType::F32, {33});
  g.output("y", g.name(g.relu(g.add(x, w)), "y"));
  auto text = lowering::plan_text(lowering::lower(g, fake_device()));
  for (const char* s : {"input", "parameter", "output", "relu_add_f32_7x33_from_7x33_33", "launches", "#0"})
    EXPECT_NE(text.find(s), std::string::npos) << s << " missing from:\n" << text;
}

TEST(Lower, UnknownOpsOfHeavyFamilyNameTheNode) {
  // Every op has a lowering or a clear error naming the node; nothing silently produces no launch.
  graph::Graph g;
  auto x = g.input("x", DType::F32, {4, 4});
  g.output("y", g.name(softmax(g, x), "probs"));
  try {
    auto plan = lowering::lower(g, fake_device());
    EXPECT_FALSE(plan.launches.empty());
  } catch (const graph::GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("probs"), std::string::npos) << e.what();
  }
}

}  // namespace
