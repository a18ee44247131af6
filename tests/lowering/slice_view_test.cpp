// Contiguous slices as windows of their input's buffer (LoweringContext::view, lower_indexing.cpp): a fused
// query/key/value projection cut in three launches nothing. The plan (which slices launch, the windows' arena offsets
// within their buffer's, the memory plan's invariant) on an H100-like target, and the results on every device present
// against the float64 evaluator, including the slices that must stay copies: not contiguous, not aligned to the
// device's binding offsets, an output themselves, or cut from an output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "lowering/memory_plan.h"
#include "lowering/plan.h"
#include "tests/lowering/device_list.h"
#include "tests/lowering/plan_queries.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/on_device.h"
#include "tests/support/random_tensor.h"

namespace slice_view_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Tensor;
using graph::Value;

namespace {

Value slice(graph::Graph& g, Value x, std::vector<int64_t> starts, graph::Shape shape) {
  return g.op("slice", {x}, {{"starts", starts}, {"steps", std::vector<int64_t>(starts.size(), 1)}, {"shape", shape}});
}

// qkv = x [rows, 8] @ w [8, 3 * width]: q, k and v its thirds along the last axis, each read by an op of its own.
// With one row the thirds are contiguous ranges of qkv; with more they are not.
struct Projection {
  graph::Graph g;
  Value qkv, q, k, v;
};
Projection projection(int64_t rows, int64_t width, bool q_is_output = false, bool qkv_is_output = false) {
  Projection p;
  graph::Graph& g = p.g;
  p.qkv = g.matmul(g.input("x", DType::F32, {1, rows, 8}), g.parameter("w", DType::F32, {8, 3 * width}));
  p.q = slice(g, p.qkv, {0, 0, 0}, {1, rows, width});
  p.k = slice(g, p.qkv, {0, 0, width}, {1, rows, width});
  p.v = slice(g, p.qkv, {0, 0, 2 * width}, {1, rows, width});
  // Read by a product and a reduction, which read their operands from buffers (a pointwise op would compute a slice of
  // its own shape in its tree instead: fuse.h).
  g.output("qk", g.matmul(p.q, g.transpose(p.k)));
  g.output("v2", g.sum(p.v, {2}));
  if (q_is_output) g.output("q", p.q);
  if (qkv_is_output) g.output("qkv", p.qkv);
  return p;
}

int slice_launches(const lowering::Plan& plan) {
  int n = 0;
  for (const std::string& k : lowering::testing_support::kernels_of(plan)) n += k.rfind("slice_", 0) == 0;
  return n;
}

TEST(SliceViewPlan, ContiguousAlignedSlicesAreWindowsOfTheirInput) {
  const Projection p = projection(1, 16);
  const lowering::Plan plan = lowering::lower(p.g, testing_support::h100_like_target());
  EXPECT_EQ(slice_launches(plan), 0) << lowering::plan_text(plan);
  EXPECT_EQ(lowering::check_memory_plan(plan), "");
  int windows = 0;
  for (const lowering::PlannedBuffer& b : plan.buffers) {
    if (b.view_of < 0) continue;
    ++windows;
    const lowering::PlannedBuffer& of = plan.buffers[size_t(b.view_of)];
    EXPECT_EQ(of.values.front(), p.g.node(p.qkv).name);
    EXPECT_EQ(b.arena_offset, of.arena_offset + int64_t(b.view_offset));
    EXPECT_EQ(b.view_offset % plan.arena_alignment, 0u);
  }
  EXPECT_EQ(windows, 3);
  // Offsets 0, 64 and 128 bytes: the windows of k and v start a third and two thirds into qkv.
  std::vector<uint64_t> offsets;
  for (const lowering::PlannedBuffer& b : plan.buffers)
    if (b.view_of >= 0) offsets.push_back(b.view_offset);
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, 64, 128}));
}

TEST(SliceViewPlan, SlicesThatAreNotOneAlignedRangeAreCopied) {
  // Two rows: each third is two ranges.
  EXPECT_EQ(slice_launches(lowering::lower(projection(2, 16).g, testing_support::h100_like_target())), 3);
  // Width 3: k starts 12 bytes in, v 24, under the 16-byte binding alignment (q at 0 is a window).
  EXPECT_EQ(slice_launches(lowering::lower(projection(1, 3).g, testing_support::h100_like_target())), 2);
}

TEST(SliceViewPlan, AnOutputIsNeitherAWindowNorWindowed) {
  for (const bool q_out : {true, false}) {
    SCOPED_TRACE(q_out ? "q is an output" : "qkv is an output");
    const Projection p = projection(1, 16, q_out, !q_out);
    const lowering::Plan plan = lowering::lower(p.g, testing_support::h100_like_target());
    EXPECT_EQ(lowering::check_memory_plan(plan), "");
    for (const lowering::PlannedBuffer& b : plan.buffers)
      if (b.view_of >= 0) {
        EXPECT_FALSE(b.persistent()) << b.slot.name;
        EXPECT_FALSE(plan.buffers[size_t(b.view_of)].persistent()) << b.slot.name;
      }
    // An output q is copied; the others cut from a persistent qkv are too.
    EXPECT_EQ(slice_launches(plan), q_out ? 1 : 3) << lowering::plan_text(plan);
  }
}

class SliceViewOnDevice : public testing_support::OnDevice {};

TEST_P(SliceViewOnDevice, EveryFormMatchesTheReference) {
  struct Form {
    const char* name;
    int64_t rows, width;
    bool q_out, qkv_out;
  };
  uint32_t seed = 70;
  for (const Form f : {Form{"windows", 1, 16, false, false}, Form{"two rows", 2, 16, false, false},
                       Form{"unaligned", 1, 3, false, false}, Form{"q an output", 1, 16, true, false},
                       Form{"qkv an output", 1, 16, false, true}}) {
    SCOPED_TRACE(f.name);
    const Projection p = projection(f.rows, f.width, f.q_out, f.qkv_out);
    std::map<std::string, Tensor> in{{"x", testing_support::uniform_tensor({1, f.rows, 8}, seed++, DType::F32)},
                                      {"w", testing_support::uniform_tensor({8, 3 * f.width}, seed++, DType::F32)}};
    auto exe = lowering::compile(p.g, *dev_);
    for (const auto& [name, t] : in) exe->set(name, t);
    exe->step();
    const auto want = graph::evaluate(p.g, in, DType::F64);
    for (const auto& o : p.g.outputs()) {
      const Tensor got = exe->get(o.name);
      ASSERT_EQ(got.numel(), want.at(o.name).numel()) << o.name;
      for (int64_t i = 0; i < got.numel(); ++i)
        EXPECT_NEAR(got[i], want.at(o.name)[i], 1e-5 * (1 + std::abs(want.at(o.name)[i]))) << o.name << " " << i;
    }
  }
}

// Windows of a product of two parameters, which a parameters-only launch computes in the first step only
// (parameter_launches.h): that result must stay in the arena for the later steps, though only its windows are read.
// After the launch reading the windows, two more products could take its bytes if it did not.
TEST_P(SliceViewOnDevice, WindowsOfAResultComputedOnceHoldAcrossSteps) {
  graph::Graph g;
  const Value qkv = g.matmul(g.parameter("a", DType::F32, {1, 1, 8}), g.parameter("w", DType::F32, {8, 48}));
  const Value x = g.input("x", DType::F32, {1, 1, 16});
  const Value sum = g.add(g.add(g.add(x, slice(g, qkv, {0, 0, 0}, {1, 1, 16})), slice(g, qkv, {0, 0, 16}, {1, 1, 16})),
                          slice(g, qkv, {0, 0, 32}, {1, 1, 16}));
  const Value m1 = g.matmul(sum, g.parameter("w1", DType::F32, {16, 16}));
  g.output("y", g.matmul(g.relu(m1), g.parameter("w2", DType::F32, {16, 16})));
  const lowering::Plan plan = lowering::lower(g, dev_->info());
  EXPECT_EQ(slice_launches(plan), 0);
  EXPECT_EQ(lowering::check_memory_plan(plan), "");
  std::map<std::string, Tensor> in;
  uint32_t seed = 120;
  for (const char* p : {"a", "w", "w1", "w2"}) in[p] = testing_support::uniform_tensor(g.type(g.at(p)).shape, seed++, DType::F32);
  auto exe = lowering::compile(g, *dev_);
  for (const auto& [name, t] : in) exe->set(name, t);
  for (int step = 0; step < 3; ++step) {
    in["x"] = testing_support::uniform_tensor({1, 1, 16}, seed++, DType::F32);
    exe->set("x", in["x"]);
    exe->step();
    const Tensor want = graph::evaluate(g, in, DType::F64).at("y"), got = exe->get("y");
    for (int64_t i = 0; i < got.numel(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "step " << step << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, SliceViewOnDevice, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SliceViewOnDevice);

}  // namespace
}  // namespace slice_view_test
