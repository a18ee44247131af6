// Fusion beyond pointwise chains (lowering/fuse.h): epilogues folded into the heavy kernel that feeds them, and
// the final group that runs an optimizer's updates of every parameter in one launch. Each case checks the plan
// (what launches) on an H100-like target and the results on every device present against the float64
// evaluator (outputs poisoned by the executor, the Vulkan validation layer on).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "frontend/lenet.h"
#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "lowering/fuse.h"
#include "lowering/plan.h"
#include "lowering/tuning_choices.h"
#include "tests/lowering/device_list.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/on_device.h"
#include "tests/support/random_tensor.h"
#include "tests/support/named_ops.h"

namespace fusion_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Graph;
using graph::Tensor;
using graph::Value;

namespace {

// Every leaf that needs a value, filled with seeded random numbers.
std::map<std::string, Tensor> random_leaves(const Graph& g, uint32_t seed) {
  std::map<std::string, Tensor> in;
  for (Value v : g.values()) {
    const graph::Node& n = g.node(v);
    if (n.op == graph::OpKind::Input || n.op == graph::OpKind::Parameter || n.op == graph::OpKind::State)
      in[n.name] = testing_support::uniform_tensor(n.type.shape, seed++, DType::F32);
  }
  return in;
}

// Compiles g on the device, sets `in`, runs `steps` steps and compares every output (and, with state updates, the
// targets after the last step) with the float64 evaluator run as many times.
void expect_matches_reference(rt::Device& dev, const Graph& g, std::map<std::string, Tensor> in, int steps = 1) {
  auto exe = lowering::compile(g, dev);
  for (const auto& [name, t] : in) exe->set(name, t);
  std::map<std::string, Tensor> want;
  for (int s = 0; s < steps; ++s) {
    exe->step();
    want = graph::evaluate(g, in, DType::F64);
    for (const graph::StateUpdate& u : g.state_updates()) in[g.node(u.target).name] = want.at(g.node(u.target).name);
  }
  std::vector<std::string> names;
  for (const auto& o : g.outputs()) names.push_back(o.name);
  for (const graph::StateUpdate& u : g.state_updates()) names.push_back(g.node(u.target).name);
  for (const std::string& name : names) {
    const Tensor got = exe->get(name), ref = want.at(name);
    ASSERT_EQ(got.data.size(), ref.data.size()) << name;
    for (size_t i = 0; i < ref.data.size(); ++i)
      ASSERT_NEAR(got.data[i], ref.data[i], 1e-4 * (1 + std::abs(ref.data[i]))) << name << " element " << i;
  }
}

// The nodes the plan's launches compute, in order.
std::vector<std::string> launched_nodes(const Graph& g, const rt::DeviceInfo& target = testing_support::h100_like_target()) {
  std::vector<std::string> out;
  for (const lowering::Launch& l : lowering::lower(g, target).launches) out.push_back(l.node);
  return out;
}

// A heavy op whose result feeds a pointwise tree of its own shape.
struct EpilogueCase {
  std::string name;
  std::function<Value(Graph&)> host;                 // builds the heavy op
  std::function<Value(Graph&, Value host)> epilogue;  // the pointwise tree over it
};

Value bias_relu(Graph& g, Value h) {
  const graph::Shape& s = g.type(h).shape;
  graph::Shape bias_shape(s.size(), 1);
  bias_shape[1] = s[1];  // per channel (dim 1), as a layer's bias
  return g.relu(g.add(h, g.reshape(g.parameter("bias", DType::F32, {s[1]}), bias_shape)));
}

// GELU's tanh form as ONNX exports spell it out, x read four times: the tree computes x once (fuse.h reads a value
// shared within one tree in it).
Value bias_gelu_tanh(Graph& g, Value h) {
  const Value x = g.add(h, g.parameter("bias", DType::F32, {g.type(h).shape.back()}));
  const Value cube = g.mul(g.mul(x, x), x);
  const Value inner = g.mul(g.add(x, g.mul(cube, 0.044715)), 0.7978845608028654);
  return g.mul(g.mul(x, 0.5), g.add(g.tanh(inner), 1.0));
}

Value silu(Graph& g, Value h) { return g.mul(h, g.sigmoid(h)); }

Value relu_grad_mask(Graph& g, Value h) { return g.relu_grad(h, g.input("forward", DType::F32, g.type(h).shape)); }

std::vector<EpilogueCase> epilogue_cases() {
  using graph::Conv2dOptions;
  const Conv2dOptions pad1{.padding = {1, 1}};
  auto input = [](Graph& g, const char* name, graph::Shape s) { return g.input(name, DType::F32, std::move(s)); };
  return {
      {"matmul_bias_relu", [=](Graph& g) { return g.matmul(input(g, "a", {37, 50}), input(g, "b", {50, 29})); }, bias_relu},
      {"matvec_bias_gelu_tanh", [=](Graph& g) { return g.matmul(input(g, "a", {1, 40}), input(g, "b", {40, 72})); },
       bias_gelu_tanh},
      {"matmul_silu", [=](Graph& g) { return g.matmul(input(g, "a", {20, 24}), input(g, "b", {24, 36})); }, silu},
      {"matmul_large_tiles_relu_grad",
       [=](Graph& g) { return g.matmul(input(g, "a", {192, 64}), input(g, "b", {64, 160})); }, relu_grad_mask},
      {"conv2d_direct_bias_relu",
       [=](Graph& g) { return g.conv2d(input(g, "x", {2, 3, 9, 9}), input(g, "w", {5, 3, 3, 3}), pad1); }, bias_relu},
      {"conv2d_gemm_bias_relu",
       [=](Graph& g) { return g.conv2d(input(g, "x", {2, 16, 16, 16}), input(g, "w", {64, 16, 3, 3}), pad1); },
       bias_relu},
      {"conv2d_grad_input_relu_grad",
       [=](Graph& g) {
         return g.conv2d_grad_input(input(g, "gy", {2, 64, 16, 16}), input(g, "w", {64, 16, 3, 3}), pad1, {2, 16, 16, 16});
       },
       relu_grad_mask},
      {"conv2d_grad_weight_split_k_scaled",
       [=](Graph& g) {
         return g.conv2d_grad_weight(input(g, "gy", {2, 64, 16, 16}), input(g, "x", {2, 16, 16, 16}), pad1, {64, 16, 3, 3});
       },
       [](Graph& g, Value h) { return g.mul(h, 0.5); }},
      {"max_pool2d_grad_relu_grad",
       [=](Graph& g) { return g.max_pool2d_grad(input(g, "gy", {2, 4, 5, 5}), input(g, "x", {2, 4, 10, 10}), {}); },
       relu_grad_mask},
      {"avg_pool2d_add", [=](Graph& g) { return g.avg_pool2d(input(g, "x", {2, 4, 10, 10})); },
       [](Graph& g, Value h) { return g.add(h, g.input("other", DType::F32, g.type(h).shape)); }},
      {"softmax_tanh", [=](Graph& g) { return softmax(g, input(g, "x", {6, 33})); },
       [](Graph& g, Value h) { return g.tanh(h); }},
  };
}

class Epilogue : public testing_support::OnDevice {};

// A weight gradient's product over a long batch splits K: partial sums, then a launch that adds them, which is the
// one storing the result and so the one that takes the epilogue.
Graph split_k_relu() {
  Graph g;
  const Value m = g.matmul(g.transpose(g.input("a", DType::F32, {4096, 20})), g.input("b", DType::F32, {4096, 24}));
  g.output("y", g.relu(m));
  return g;
}

TEST(EpiloguePlan, ASplitKProductAppliesItInTheLaunchThatAddsThePartialSums) {
  const lowering::Plan plan = lowering::lower(split_k_relu(), testing_support::h100_like_target());
  ASSERT_EQ(plan.launches.size(), 2u);
  EXPECT_EQ(plan.kernels[size_t(plan.launches[0].kernel)].name.find("_relu"), std::string::npos);
  const std::string sum = plan.kernels[size_t(plan.launches[1].kernel)].name;
  EXPECT_EQ(sum.rfind("matmul_sum_", 0), 0u) << sum;
  EXPECT_NE(sum.find("_relu"), std::string::npos) << sum;
}

TEST_P(Epilogue, ASplitKProductMatchesTheReference) {
  const Graph g = split_k_relu();
  expect_matches_reference(*dev_, g, random_leaves(g, 7));
}

TEST(EpiloguePlan, EveryHostComputesItsPointwiseTreeWithNoLaunchOfItsOwn) {
  for (const EpilogueCase& c : epilogue_cases()) {
    Graph g;
    const Value h = c.host(g);
    g.output("y", c.epilogue(g, h));
    const std::vector<std::string> nodes = launched_nodes(g);
    ASSERT_FALSE(nodes.empty()) << c.name;
    for (const std::string& n : nodes) EXPECT_EQ(n, g.node(h).name) << c.name << ": a launch of its own for " << n;
    EXPECT_GE(lowering::plan_fusion(g).epilogue[size_t(h.id)], 0) << c.name;
  }
}

TEST_P(Epilogue, EveryHostMatchesTheReference) {
  uint32_t seed = 10;
  for (const EpilogueCase& c : epilogue_cases()) {
    SCOPED_TRACE(c.name);
    Graph g;
    g.output("y", c.epilogue(g, c.host(g)));
    expect_matches_reference(*dev_, g, random_leaves(g, seed += 10));
  }
}

// A half bias cast up and read through a broadcast, after a reshape (as compute_in_f32 leaves a half layer's bias):
// the reader converts each element it loads, so the cast gets no launch. `host`: a convolution (the reader is its
// epilogue), else the input itself (the reader is a pointwise kernel). `constant`: the bias is a constant (as the ONNX
// importer makes of an initializer whose elements are all equal), which the reader folds.
Graph half_bias_relu(bool host, bool constant = false) {
  Graph g;
  Value x = g.input("x", DType::F32, {2, 8, 5, 5});
  if (host) x = g.conv2d(x, g.input("w", DType::F32, {8, 8, 3, 3}), {.padding = {1, 1}});
  const Value b = constant ? g.constant(0.375, DType::F16, {8}) : g.parameter("b", DType::F16, {8});
  g.output("y", g.relu(g.add(x, g.reshape(g.name(g.cast(b, DType::F32), "b_up"), {1, 8, 1, 1}))));
  return g;
}

// x and w uniform, b exact in f16 (k / 8 - 0.5), so the evaluator and the device read the same values.
std::map<std::string, Tensor> half_bias_inputs(const Graph& g) {
  std::map<std::string, Tensor> in = random_leaves(g, 21);
  if (!g.find("b")) return in;  // a constant bias
  Tensor b(DType::F16, {8}, 0);
  for (size_t k = 0; k < b.data.size(); ++k) b.data[k] = double(k) / 8 - 0.5;
  in["b"] = b;
  return in;
}

TEST(CastReadThroughBroadcast, ComputedByItsReaderWithNoLaunchOfItsOwn) {
  for (bool constant : {false, true})
    for (bool host : {false, true}) {
      const Graph g = half_bias_relu(host, constant);
      const lowering::Fusion f = lowering::plan_fusion(g);
      const Value cast = *g.find("b_up");
      EXPECT_TRUE(f.fused[size_t(cast.id)]) << host << constant;
      EXPECT_TRUE(f.fused[size_t(g.users()[size_t(cast.id)][0].id)]) << host << constant;  // the reshape
      EXPECT_EQ(launched_nodes(g).size(), 1u) << host << constant << ": " << ::testing::PrintToString(launched_nodes(g));
    }
  // Not where the cast is read twice, or is an output itself: it then has a buffer and a launch.
  Graph twice;
  const Value b = twice.reshape(twice.name(twice.cast(twice.parameter("b", DType::F16, {8}), DType::F32), "b_up"),
                                {1, 8, 1, 1});
  const Value x = twice.input("x", DType::F32, {2, 8, 5, 5});
  twice.output("y", twice.add(x, b));
  twice.output("z", twice.mul(x, b));
  EXPECT_FALSE(lowering::plan_fusion(twice).fused[size_t(twice.find("b_up")->id)]);
  Graph output = half_bias_relu(false);
  output.output("b_up", *output.find("b_up"));
  EXPECT_FALSE(lowering::plan_fusion(output).fused[size_t(output.find("b_up")->id)]);
  EXPECT_EQ(launched_nodes(output).size(), 2u);
}

// A chain of casts read through a broadcast: a rotary table's positions under a half policy (i64, cast to f32, rounded
// to bf16 and cast back up), times the frequencies. The reader converts each element it loads three times; no cast
// has a launch.
Graph positions_times_frequencies() {
  Graph g;
  const Value positions = g.input("positions", DType::I64, {1, 1, 1});
  const Value up = g.name(g.cast(g.cast(g.cast(positions, DType::F32), DType::BF16), DType::F32), "positions_up");
  g.output("y", g.mul(up, g.input("frequencies", DType::F32, {1, 1, 4})));
  return g;
}

TEST(CastReadThroughBroadcast, AChainOfCastsIsComputedByItsReaderToo) {
  const Graph g = positions_times_frequencies();
  EXPECT_TRUE(lowering::plan_fusion(g).fused[size_t(g.find("positions_up")->id)]);
  EXPECT_EQ(launched_nodes(g).size(), 1u) << ::testing::PrintToString(launched_nodes(g));
}

TEST_P(Epilogue, AChainOfCastsReadThroughABroadcastMatchesTheReference) {
  if (!dev_->info().features.has(kir::Feature::BFloat16)) GTEST_SKIP() << "no bf16 storage on this device";
  const Graph g = positions_times_frequencies();
  auto exe = lowering::compile(g, *dev_);
  // A position bf16 does not hold: 257 rounds to 256 (the float64 evaluator keeps casts exact, so the expected values
  // are worked out here).
  exe->set("positions", Tensor(DType::I64, {1, 1, 1}, 257));
  const Tensor frequencies(DType::F32, {1, 1, 4}, 0.375);
  exe->set("frequencies", frequencies);
  exe->step();
  const Tensor y = exe->get("y");
  ASSERT_EQ(y.data.size(), 4u);
  for (double v : y.data) EXPECT_EQ(v, 256 * 0.375);
}

TEST_P(Epilogue, AHalfBiasCastUpByItsReaderMatchesTheReference) {
  if (!dev_->info().features.has(kir::Feature::Float16)) GTEST_SKIP() << "no f16 storage on this device";
  for (bool constant : {false, true})
    for (bool host : {false, true}) {
      SCOPED_TRACE(fmt::format("{} {}", host ? "epilogue" : "pointwise", constant ? "constant" : "parameter"));
      const Graph g = half_bias_relu(host, constant);
      expect_matches_reference(*dev_, g, half_bias_inputs(g));
    }
}

TEST_P(Epilogue, NotTakenWhenTheTreeReadsAValueComputedAfterTheHost) {
  Graph g;
  const Value m = g.matmul(g.input("a", DType::F32, {8, 12}), g.input("b", DType::F32, {12, 8}));
  const Value later = g.sum(g.input("c", DType::F32, {8, 8, 3}), {2});  // scheduled after the matmul
  g.output("y", g.relu(g.add(m, later)));
  EXPECT_LT(lowering::plan_fusion(g).epilogue[size_t(m.id)], 0);
  EXPECT_EQ(launched_nodes(g).size(), 3u);  // matmul, sum, relu(add)
  expect_matches_reference(*dev_, g, random_leaves(g, 3));
}

TEST_P(Epilogue, NotTakenWhenTheHostResultIsAlsoAnOutput) {
  Graph g;
  const Value m = g.matmul(g.input("a", DType::F32, {8, 12}), g.input("b", DType::F32, {12, 8}));
  g.output("m", m);
  g.output("y", g.relu(m));
  EXPECT_LT(lowering::plan_fusion(g).epilogue[size_t(m.id)], 0);
  expect_matches_reference(*dev_, g, random_leaves(g, 4));
}

// Three parameters of different shapes (and two of one shape), each updated by SGD with momentum from a gradient
// fed as an input: the updates are state updates that nothing else reads.
Graph sgd_graph() {
  Graph g;
  int k = 0;
  for (graph::Shape s : {graph::Shape{30, 7}, graph::Shape{7}, graph::Shape{3, 5, 2}, graph::Shape{30, 7}}) {
    const std::string name = fmt::format("p{}", k++);
    const Value p = g.parameter(name, DType::F32, s);
    const Value m = g.state("momentum." + name, DType::F32, s);
    const Value grad = g.input("grad." + name, DType::F32, s);
    const Value m2 = g.add(g.mul(m, 0.9), grad);
    g.state_update(m, m2);
    g.state_update(p, g.sub(p, g.mul(m2, 0.05)));
  }
  return g;
}

// A product on workgroup matrices (a Vulkan target with VK_NV_cooperative_matrix2, its kernel chosen through the
// tuning choices) stores whole matrices, which no epilogue can fold into: its pointwise tree gets a launch of its own.
// The subgroup kernel (the heuristic) folds the same tree into its stores.
TEST(EpiloguePlan, AWorkgroupMatrixProductLaunchesItsTreeOnItsOwn) {
  rt::DeviceInfo target = testing_support::h100_like_target("vulkan-like:0");
  target.backend = rt::Backend::Vulkan;
  target.compute_capability = 0;
  target.features |= kir::Features(kir::Feature::BFloat16) | kir::Feature::CooperativeMatrix | kir::Feature::AsyncCopy |
                     kir::Feature::WorkgroupMatrix;
  Graph g;
  const Value a = g.input("a", DType::BF16, {256, 128}), b = g.input("b", DType::BF16, {128, 256});
  g.output("y", g.relu(g.matmul(a, b)));
  auto kernels_of = [&](const lowering::Plan& plan) {
    std::vector<std::string> names;
    for (const lowering::Launch& l : plan.launches) names.push_back(plan.kernels[size_t(l.kernel)].name);
    return names;
  };
  const std::vector<std::string> folded = kernels_of(lowering::lower(g, target));
  ASSERT_EQ(folded.size(), 1u);
  EXPECT_NE(folded[0].find("_mma_f32"), std::string::npos) << folded[0];
  EXPECT_NE(folded[0].find("relu"), std::string::npos) << folded[0];

  lowering::MapTuningChoices choices;
  choices.configs[{"matmul", "m256_k128_n256_abf16_bbf16", "f32"}] =
      lowering::heavy::Config::parse("tile_m=128,tile_n=128,tile_k=32,workgroup_matrix=1,unroll=1");
  const std::vector<std::string> apart = kernels_of(lowering::lower(g, target, nullptr, &choices));
  ASSERT_EQ(apart.size(), 2u);
  EXPECT_NE(apart[0].find("_workgroup_f32"), std::string::npos) << apart[0];
  EXPECT_EQ(apart[0].find("relu"), std::string::npos) << apart[0];
  EXPECT_NE(apart[1].find("relu"), std::string::npos) << apart[1];
}

TEST(FinalGroupPlan, SgdUpdatesOfEveryParameterAreOneLaunch) {
  const Graph g = sgd_graph();
  EXPECT_EQ(lowering::plan_fusion(g).final_group.size(), 8u);
  EXPECT_EQ(launched_nodes(g).size(), 1u);
}

TEST(FinalGroupPlan, SplitsWhereTheDeviceBindsFewerBuffers) {
  const Graph g = sgd_graph();
  rt::DeviceInfo small = testing_support::h100_like_target();
  small.max_kernel_buffers = 8;  // each parameter's segment binds 5: p', m' written; p, m, grad read
  const lowering::Plan plan = lowering::lower(g, small);
  EXPECT_GT(plan.launches.size(), 1u);
  std::multiset<int32_t> written;
  for (const lowering::Launch& l : plan.launches) {
    const kir::Kernel& k = plan.kernels[size_t(l.kernel)];
    EXPECT_LE(k.buffers.size(), 8u) << k.name;
    for (size_t i = 0; i < k.buffers.size(); ++i)
      if (k.buffers[i].access != kir::Access::Read) written.insert(l.buffers[i]);
  }
  EXPECT_EQ(written.size(), 8u);  // every new value once
  EXPECT_EQ(std::set<int32_t>(written.begin(), written.end()).size(), 8u);
}

class FinalGroup : public testing_support::OnDevice {};

TEST_P(FinalGroup, SgdStepsMatchTheReference) {
  const Graph g = sgd_graph();
  expect_matches_reference(*dev_, g, random_leaves(g, 20), 3);
}

// A sum of 40 inputs, each scaled and offset (a wide decomposition, an unrolled recurrence): one pointwise tree that
// would load 40 values. lavapipe lets a kernel bind 32 buffers; fusion cuts the tree so no kernel loads more than 16.
Graph wide_sum_graph() {
  Graph g;
  Value acc;
  for (int i = 0; i < 40; ++i) {
    Value x = g.input(fmt::format("x{}", i), DType::F32, {3, 67});
    Value term = g.add(g.mul(x, 1.0 + 0.125 * i), 0.5);
    acc = i == 0 ? term : g.add(acc, term);
  }
  g.output("y", g.relu(acc));
  return g;
}

TEST(TreeInputs, AWideTreeIsCutSoNoKernelBindsMoreThan17Buffers) {
  const Graph g = wide_sum_graph();
  const lowering::Plan plan = lowering::lower(g, testing_support::h100_like_target());
  EXPECT_GT(plan.launches.size(), 2u);  // 40 loads make at least three kernels of at most 16
  for (const lowering::Launch& l : plan.launches) {
    const kir::Kernel& k = plan.kernels[size_t(l.kernel)];
    EXPECT_LE(k.buffers.size(), 17u) << k.name;  // 16 loaded values and the result
  }
}

class TreeInputs : public testing_support::OnDevice {};

TEST_P(TreeInputs, AWideTreeMatchesTheReference) {
  const Graph g = wide_sum_graph();
  expect_matches_reference(*dev_, g, random_leaves(g, 40));
}

TEST(LeNetLaunches, TrainingStepAtMost30) {
  nn::LeNetGraphOptions o;
  o.batch = 64;
  o.sgd = true;
  o.sgd_options = {.lr = 0.05, .momentum = 0.9, .weight_decay = 0};
  const Graph g = nn::build_lenet_graph(o);
  // 69 launches before transposes were folded into products, 57 after, 29 with the epilogues and the final
  // group (the goal: at most 30).
  const std::vector<std::string> nodes = launched_nodes(g);
  EXPECT_LE(nodes.size(), 30u);
  EXPECT_EQ(std::count_if(nodes.begin(), nodes.end(), [](const std::string& n) { return n.rfind("final group", 0) == 0; }), 1);
}

auto devices() { return testing::ValuesIn(lowering::testing_support::device_ids()); }
auto device_test_name = [](const auto& p) { return lowering::testing_support::test_name(p.param); };
INSTANTIATE_TEST_SUITE_P(AllDevices, Epilogue, devices(), device_test_name);
INSTANTIATE_TEST_SUITE_P(AllDevices, FinalGroup, devices(), device_test_name);
INSTANTIATE_TEST_SUITE_P(AllDevices, TreeInputs, devices(), device_test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Epilogue);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FinalGroup);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TreeInputs);

}  // namespace
}  // namespace fusion_test
