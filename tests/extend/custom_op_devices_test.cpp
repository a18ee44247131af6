// Custom ops on every device present: the op harness's cases of the example ops (GLSL kernels on Vulkan
// devices, the kernel-builder ReLU everywhere) against their CPU references; the seed LeNet trained with the
// custom ReLU step by step against the built-in one; seed 001's SiLU MLP, forward and backward, against the
// float64 evaluator. Validation layer on (ctest sets SPIRE_VULKAN_VALIDATION=1).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "autograd/grad.h"
#include "examples/custom_ops/seed_ops.h"
#include "frontend/lenet.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/op_table.h"
#include "ir/graph/text_form.h"
#include "tests/support/graph_file_step.h"
#include "io/idx.h"
#include "lowering/executable.h"
#include "op_harness/op_harness.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "training/batches.h"

using namespace spire;
using graph::DType;

namespace {

bool glsl_only(graph::OpKind op) { return graph::op_name(op) != "seed_relu_kb"; }

TEST(CustomOpsOnDevices, EveryExampleOpMatchesItsCpuReferenceForwardAndBackward) {
  examples::register_example_op_files();
  examples::register_seed_relu_builder();
  std::vector<harness::OpCase> cases;  // the example ops' (other tests of this program register ops of their own)
  for (auto& c : harness::custom_op_cases())
    if (graph::op_name(c.op).starts_with("seed_")) cases.push_back(std::move(c));
  ASSERT_GE(cases.size(), 14u);  // seed_relu 4, seed_relu_kb 4, seed_silu 2, seed_silu_grad 2, seed_add_relu 2
  int compared = 0;
  for (const auto& info : rt::list_devices()) {
    auto dev = rt::open_device(info.id);
    const uint64_t before = rt::vulkan::validation_message_count();
    for (const auto& c : cases) {
      SCOPED_TRACE(fmt::format("{} {} on {}", graph::op_name(c.op), c.label, info.id));
      auto rows = harness::run_op_case(c, *dev, 7);
      ASSERT_FALSE(rows.empty());
      if (info.backend == rt::Backend::Cuda && glsl_only(c.op)) {
        // Not a failure: the op was written for Vulkan devices, and the row says so.
        EXPECT_EQ(rows[0].outcome, harness::Outcome::Skip);
        EXPECT_NE(rows[0].note.find("runs on Vulkan devices only"), std::string::npos) << rows[0].note;
        continue;
      }
      for (const auto& r : rows) {
        EXPECT_EQ(r.outcome, harness::Outcome::Pass) << harness::format_row(r) << " " << r.note;
        ++compared;
      }
    }
    EXPECT_EQ(rt::vulkan::validation_message_count(), before) << "the Vulkan validation layer reported messages";
  }
  if (compared == 0) GTEST_SKIP() << "no device present";
}

// Losses of `steps` SGD steps of the seed LeNet (batch 64, Fashion-MNIST's first images, seed 0) on `dev`.
std::vector<float> lenet_losses(rt::Device& dev, const std::string& relu_op, int steps) {
  static const io::FashionMnist train = io::load_fashion_mnist(io::kFashionMnistDir, io::Split::Train);
  nn::LeNetGraphOptions opt{.batch = 64, .sgd = true};
  opt.sgd_options = {.lr = 0.05, .momentum = 0.9, .weight_decay = 0};
  opt.relu_op = relu_op;
  auto step = lowering::compile(nn::build_lenet_graph(opt), dev);
  for (const auto& [name, t] : nn::lenet_initial_parameters(0)) step->set(name, t);
  training::Batches batches(train, 64, 64 * steps);
  batches.shuffle(0, 1);
  std::vector<float> x, losses;
  std::vector<int32_t> y;
  for (int b = 0; b < steps; ++b) {
    batches.fill(b, x, y);
    step->set_raw("x", x.data(), x.size() * sizeof(float));
    step->set_raw("y", y.data(), y.size() * sizeof(int32_t));
    step->step();
    float loss = 0;
    step->get_raw("loss", &loss, sizeof loss);
    losses.push_back(loss);
  }
  return losses;
}

TEST(CustomOpsOnDevices, LeNetWithTheCustomReluFollowsTheBuiltInLossCurve) {
  const std::vector<std::string> relus = {examples::register_seed_relu_glsl(), examples::register_seed_relu_builder()};
  int devices = 0;
  for (const auto& info : rt::list_devices()) {
    auto dev = rt::open_device(info.id);
    const int steps = 25;
    const std::vector<float> builtin = lenet_losses(*dev, "relu", steps);
    ASSERT_LT(builtin.back(), builtin.front()) << "the built-in LeNet does not learn on " << info.id;
    for (const std::string& relu : relus) {
      if (info.backend == rt::Backend::Cuda && relu == "seed_relu") continue;  // GLSL: Vulkan only
      const std::vector<float> custom = lenet_losses(*dev, relu, steps);
      for (int s = 0; s < steps; ++s)
        EXPECT_NEAR(custom[size_t(s)], builtin[size_t(s)], 1e-5) << relu << " on " << info.id << ", step " << s;
    }
    ++devices;
    if (info.type == rt::DeviceType::Cpu) break;  // lavapipe: one CPU device is enough for the suite's time
  }
  if (devices == 0) GTEST_SKIP() << "no device present";
}

// Seed 001's SiLU MLP with its custom SiLU (examples/custom_ops/silu_mlp.graph) and its parameter gradients.
graph::Graph silu_mlp_step() {
  return testing_support::graph_file_step(SPIRE_SOURCE_DIR "/examples/custom_ops/silu_mlp.graph");
}

TEST(CustomOpsOnDevices, TheSiluMlpMatchesTheFloat64EvaluatorOnEveryVulkanDevice) {
  examples::register_example_op_files();
  const graph::Graph g = silu_mlp_step();
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::map<std::string, graph::Tensor> feed;
  for (graph::Value v : g.values()) {
    const graph::Node& n = g.node(v);
    if (n.op != graph::OpKind::Input && n.op != graph::OpKind::Parameter) continue;
    graph::Tensor t(n.type.dtype, n.type.shape);
    for (double& e : t.data) e = u(rng) * (n.op == graph::OpKind::Parameter ? 0.2 : 2.0);
    t.round_to_dtype();
    feed[n.name] = t;
  }
  const auto want = graph::evaluate(g, feed, DType::F64);
  int devices = 0;
  for (const auto& info : rt::list_devices()) {
    if (info.backend != rt::Backend::Vulkan) continue;  // seed_silu.op's kernels are GLSL
    auto dev = rt::open_device(info.id);
    auto exe = lowering::compile(g, *dev);
    for (const auto& [name, t] : feed) exe->set(name, t);
    exe->step();
    for (const auto& o : g.outputs()) {
      const graph::Tensor got = exe->get(o.name);
      EXPECT_LE(harness::max_norm_error(got, want.at(o.name)), 1e-5) << o.name << " on " << info.id;
    }
    ++devices;
  }
  if (devices == 0) GTEST_SKIP() << "no Vulkan device present";
}

}  // namespace
