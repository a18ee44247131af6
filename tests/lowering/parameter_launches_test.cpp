// Launches that compute only from parameters (lowering/parameter_launches.h): which launches the plan marks, that
// their results keep their arena space for the whole step, and that the executor runs them in the first step and
// after set() of a parameter only, with the right results in every step, on every device present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "lowering/executable.h"
#include "lowering/memory_plan.h"
#include "lowering/plan.h"
#include "tests/lowering/device_list.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/on_device.h"
#include "tests/support/random_tensor.h"

using namespace spire;
using graph::DType;
using graph::Tensor;

namespace {

// y = relu(x * sum(w, 0)) + exp(x) and t = sum(y * y, 1): the column sums of parameter w are one launch that reads w
// alone.
struct ColumnSums {
  graph::Graph g;
  graph::Value w, x;
};
ColumnSums column_sums(bool trained) {
  ColumnSums c;
  c.x = c.g.input("x", DType::F32, {4, 3});
  c.w = c.g.parameter("w", DType::F32, {5, 3});
  graph::Value s = c.g.sum(c.w, {0});
  graph::Value y = c.g.add(c.g.relu(c.g.mul(c.x, s)), c.g.exp(c.x));
  c.g.output("y", y);
  // A launch after the one reading the sums: their buffer's own lifetime would end before the step does.
  c.g.output("t", c.g.sum(c.g.mul(y, y), {1}));
  // Training: w changes every step (a state update), so its sums must be computed every step.
  if (trained) c.g.state_update(c.w, c.g.sub(c.w, c.g.mul(c.g.sum(y), 0.5)));
  return c;
}

// Fresh values for the parameter w [5, 3] and the input x [4, 3].
Tensor w_values(uint32_t seed) { return testing_support::uniform_tensor({5, 3}, seed, DType::F32); }
Tensor x_values(uint32_t seed) { return testing_support::uniform_tensor({4, 3}, seed, DType::F32); }

// Only the launches the plan runs for the column sums read nothing but w.
TEST(ParameterLaunches, OnlyLaunchesReadingFixedParametersAreMarked) {
  const lowering::Plan plan = lowering::lower(column_sums(false).g, testing_support::h100_like_target());
  int once = 0;
  for (const lowering::Launch& l : plan.launches) {
    once += l.parameters_only;
    if (l.parameters_only) {
      EXPECT_NE(plan.kernels[size_t(l.kernel)].name.find("sum"), std::string::npos) << l.node;
    }
  }
  EXPECT_GE(once, 1);
  EXPECT_LT(size_t(once), plan.launches.size());
  // What they leave for the other launches lives in the arena for the whole step, and no other buffer shares it.
  int kept = 0;
  for (const lowering::PlannedBuffer& b : plan.buffers) {
    if (b.persistent() || b.first_use < 0) continue;
    bool written_once = false, read_every_step = false;
    for (const lowering::Launch& l : plan.launches) {
      const auto& k = plan.kernels[size_t(l.kernel)];
      for (size_t i = 0; i < l.buffers.size(); ++i) {
        if (&plan.buffers[size_t(l.buffers[i])] != &b) continue;
        written_once |= l.parameters_only && k.buffers[i].access != kir::Access::Read;
        read_every_step |= !l.parameters_only;
      }
    }
    if (!written_once || !read_every_step) continue;
    ++kept;
    EXPECT_EQ(b.first_use, 0) << b.slot.name;
    EXPECT_EQ(b.last_use, int32_t(plan.launches.size()) - 1) << b.slot.name;
  }
  EXPECT_GE(kept, 1);
  EXPECT_EQ(lowering::check_memory_plan(plan), "");
  EXPECT_NE(lowering::plan_text(plan).find("(parameters only: runs when they change)"), std::string::npos);
}

// A large bf16 product on an H100's vulkan:0 (by its data: cooperative matrices, 48 KiB of workgroup memory, not PTX)
// multiplies packed operands (kernels/matmul_packed_kernel.h): a packing launch per operand, then the
// product. A Linear layer's weight is packed once; the activation every step.
TEST(ParameterLaunches, AWeightIsPackedOnceForTheProductFromPackedOperands) {
  rt::DeviceInfo vulkan = testing_support::h100_like_target("vulkan-like:0");
  vulkan.backend = rt::Backend::Vulkan;
  vulkan.features =
      vulkan.features | kir::Feature::BFloat16 | kir::Feature::CooperativeMatrix | kir::Feature::AsyncCopy;
  graph::Graph g;
  graph::Value x = g.input("x", DType::BF16, {4096, 512});
  graph::Value w = g.parameter("w", DType::BF16, {4096, 512});
  g.output("y", g.matmul(x, g.transpose(w)));
  const lowering::Plan plan = lowering::lower(g, vulkan);
  std::vector<std::string> once, every;
  for (const lowering::Launch& l : plan.launches)
    (l.parameters_only ? once : every).push_back(plan.kernels[size_t(l.kernel)].name);
  ASSERT_EQ(once.size(), 1u) << lowering::plan_text(plan);
  EXPECT_NE(once[0].find("matmul_pack_b"), std::string::npos) << once[0];
  ASSERT_EQ(every.size(), 2u) << lowering::plan_text(plan);
  EXPECT_NE(every[0].find("matmul_pack_a"), std::string::npos) << every[0];
  EXPECT_NE(every[1].find("_packed_"), std::string::npos) << every[1];
  EXPECT_EQ(lowering::check_memory_plan(plan), "");
}

TEST(ParameterLaunches, NoneWhereTheParametersChangeEveryStep) {
  const lowering::Plan plan = lowering::lower(column_sums(true).g, testing_support::h100_like_target());
  for (const lowering::Launch& l : plan.launches) EXPECT_FALSE(l.parameters_only) << l.node;
}

// Asked not to (parameters_once false): nothing marked, and no lifetime stretched past its own launches.
TEST(ParameterLaunches, NoneWhenAskedToRunEveryLaunchEveryStep) {
  const lowering::Plan plan =
      lowering::lower(column_sums(false).g, testing_support::h100_like_target(), nullptr, nullptr, false);
  for (const lowering::Launch& l : plan.launches) EXPECT_FALSE(l.parameters_only) << l.node;
  const lowering::Plan once = lowering::lower(column_sums(false).g, testing_support::h100_like_target());
  EXPECT_LE(plan.arena_bytes, once.arena_bytes);
  EXPECT_EQ(lowering::check_memory_plan(plan), "");
}

class ParameterLaunchesOnDevice : public testing_support::OnDevice {};

// y for x and w computed here in float64 (exp rounded to f32 tolerances).
void expect_y(const Tensor& y, const Tensor& x, const Tensor& w) {
  ASSERT_EQ(y.shape, (graph::Shape{4, 3}));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int r = 0; r < 5; ++r) s += w.data[size_t(r * 3 + j)];
      const double xv = x.data[size_t(i * 3 + j)];
      EXPECT_NEAR(y.data[size_t(i * 3 + j)], std::max(0.0, xv * s) + std::exp(xv), 1e-5) << i << "," << j;
    }
}

// Sets w (when given) and x, runs a step, checks y; returns how many launches the step ran.
size_t step_with(lowering::Executable& exe, const Tensor* w, const Tensor& x, const Tensor& w_now) {
  if (w) exe.set("w", *w);
  exe.set("x", x);
  exe.step();
  expect_y(exe.get("y"), x, w_now);
  return exe.last_launch_times().size();
}

TEST_P(ParameterLaunchesOnDevice, RunInTheFirstStepAndAfterAParameterIsSet) {
  lowering::CompileOptions opt;
  opt.profile = true;  // last_launch_times() lists the launches the last step ran
  auto exe = lowering::compile(column_sums(false).g, *dev_, opt);
  EXPECT_EQ(exe->last_launch_times().size(), 0u);  // no step yet
  Tensor w = w_values(1), x = x_values(2);
  const size_t first = step_with(*exe, &w, x, w);
  // A new input only: the sums of w from the first step still hold.
  x = x_values(3);
  const size_t steady = step_with(*exe, nullptr, x, w);
  EXPECT_LT(steady, first);
  EXPECT_EQ(step_with(*exe, nullptr, x, w), steady);
  // A new parameter: its sums are computed again, once.
  w = w_values(4);
  EXPECT_EQ(step_with(*exe, &w, x, w), first);
  EXPECT_EQ(step_with(*exe, nullptr, x, w), steady);
}

TEST_P(ParameterLaunchesOnDevice, EveryLaunchEveryStepWhenAsked) {
  lowering::CompileOptions opt;
  opt.profile = true;
  opt.parameters_once = false;
  auto exe = lowering::compile(column_sums(false).g, *dev_, opt);
  const Tensor w = w_values(7);
  const size_t first = step_with(*exe, &w, x_values(8), w);
  EXPECT_EQ(step_with(*exe, nullptr, x_values(9), w), first);
}

// Two steps in flight with x streamed: the step after a parameter is set runs the parameters-only launches, the
// steps queued behind it do not, and every step sees the values set before it.
TEST_P(ParameterLaunchesOnDevice, StepsInFlightSeeTheParameterSetBeforeThem) {
  const ColumnSums c = column_sums(false);
  lowering::CompileOptions opt;
  opt.streamed_inputs = {"x"};
  opt.streamed_outputs = {"y"};
  opt.steps_in_flight = 2;
  auto exe = lowering::compile(c.g, *dev_, opt);
  Tensor w = w_values(5);
  exe->set("w", w);
  for (int round = 0; round < 2; ++round) {
    std::vector<Tensor> xs;
    for (int s = 0; s < 4; ++s) {
      xs.push_back(x_values(uint32_t(10 + round * 4 + s)));
      exe->set("x", xs.back());
      exe->start_step();
      if (s > 0) {
        exe->finish_step();
        expect_y(exe->get("y"), xs[size_t(s - 1)], w);
      }
    }
    exe->finish_step();
    expect_y(exe->get("y"), xs.back(), w);
    w = w_values(6);
    exe->set("w", w);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, ParameterLaunchesOnDevice,
                         testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ParameterLaunchesOnDevice);

}  // namespace
