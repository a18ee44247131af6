// Seed 001's SiLU MLP in bfloat16 (examples/models/silu_mlp_bf16.graph), forward and every parameter gradient,
// on every device present against the float64 evaluator, with the seed's initialisation (parameters uniform in
// [-1, 1], input normal); and refused by the feature's name on a device with bfloat16 masked. Validation layer
// on (ctest sets SPIRE_VULKAN_VALIDATION=1).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "autograd/grad.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/op_table.h"
#include "ir/graph/text_form.h"
#include "tests/support/graph_file_step.h"
#include "lowering/executable.h"
#include "op_harness/op_harness.h"
#include "runtime/vulkan/vulkan_validation.h"
#include "tests/lowering/device_list.h"

namespace half_model_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;

namespace {

graph::Graph silu_mlp_bf16_step() {
  return testing_support::graph_file_step(SPIRE_SOURCE_DIR "/examples/models/silu_mlp_bf16.graph");
}

std::map<std::string, graph::Tensor> seed_inputs(const graph::Graph& g) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::normal_distribution<double> normal;
  std::map<std::string, graph::Tensor> feed;
  for (graph::Value v : g.values()) {
    const graph::Node& n = g.node(v);
    if (n.op != graph::OpKind::Input && n.op != graph::OpKind::Parameter) continue;
    graph::Tensor t(n.type.dtype, n.type.shape);
    for (double& e : t.data) e = n.op == graph::OpKind::Parameter ? uniform(rng) : normal(rng);
    feed[n.name] = t.round_to_dtype();
  }
  return feed;
}

class SiluMlpBf16 : public ::testing::TestWithParam<std::string> {};

TEST_P(SiluMlpBf16, MatchesTheFloat64EvaluatorForwardAndBackward) {
  auto dev = rt::open_device(GetParam());
  if (!dev->info().features.has(kir::Feature::BFloat16)) GTEST_SKIP() << GetParam() << " has no bfloat16";
  const graph::Graph g = silu_mlp_bf16_step();
  const auto feed = seed_inputs(g);
  const auto want = graph::evaluate(g, feed, DType::F64);
  const uint64_t before = rt::vulkan::validation_message_count();
  auto exe = lowering::compile(g, *dev);
  for (const auto& [name, t] : feed) exe->set(name, t);
  exe->step();
  // A chain of a dozen ops, each rounding to bf16: the op harness's backward tolerance for bf16 (8 x 2^-8).
  const double tolerance = graph::op_tolerance(graph::OpKind::Matmul, true, DType::BF16);
  for (const auto& o : g.outputs()) {
    const graph::Tensor got = exe->get(o.name);
    EXPECT_EQ(got.dtype, DType::BF16) << o.name;
    EXPECT_LE(harness::max_norm_error(got, want.at(o.name)), tolerance) << o.name;
  }
  EXPECT_EQ(rt::vulkan::validation_message_count(), before) << "the Vulkan validation layer reported messages";
}

TEST_P(SiluMlpBf16, IsRefusedByNameWithoutBFloat16) {
  ::setenv("SPIRE_MASK_FEATURES", "bfloat16", 1);
  auto dev = rt::open_device(GetParam());
  ::unsetenv("SPIRE_MASK_FEATURES");
  ASSERT_FALSE(dev->info().features.has(kir::Feature::BFloat16));
  try {
    lowering::compile(silu_mlp_bf16_step(), *dev);
    FAIL() << "a bf16 model compiled for a device without bfloat16";
  } catch (const rt::MissingFeature& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, SiluMlpBf16, ::testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SiluMlpBf16);

}  // namespace
}  // namespace half_model_test
