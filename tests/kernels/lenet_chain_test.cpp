// The heavy ops inside whole graphs, through lowering::compile() (the plan, the executor and the other
// lowerings) on every device: a LeNet-like forward chain, and LeNet's full training step (forward, loss,
// every parameter gradient), each compared with the float64 reference evaluator.
//
// Tolerances. The chain: relative to the chain evaluated on |inputs|, which bounds every intermediate
// magnitude (relu and max keep the bound; matmul and conv then sum |products|): 2e-5 of it (the final dot
// product has K = 1176 terms). The training step: norm-wise, |error| <= 1e-4 * max |reference| per output,
// since gradients pass through several f32 dot products and exp/log.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "frontend/lenet.h"
#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "tests/kernels/compare.h"
#include "tests/kernels/device_run.h"

namespace lenet_chain_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using namespace spire::heavy_test;

namespace {

class LeNetOnDevice : public testing::TestWithParam<std::string> {};

TEST_P(LeNetOnDevice, ConvReluPoolFlattenMatmulChain) {
  graph::Graph g;
  auto x = g.input("x", graph::DType::F32, {4, 1, 28, 28});
  auto w = g.input("w", graph::DType::F32, {6, 1, 5, 5});
  auto fc = g.input("fc", graph::DType::F32, {6 * 14 * 14, 10});
  auto h = g.max_pool2d(g.relu(g.conv2d(x, w, {.padding = {2, 2}})));
  g.output("y", g.matmul(g.flatten(h), fc));
  std::map<std::string, graph::Tensor> inputs{{"x", random_tensor(graph::DType::F32, {4, 1, 28, 28}, 51)},
                                              {"w", random_tensor(graph::DType::F32, {6, 1, 5, 5}, 52)},
                                              {"fc", random_tensor(graph::DType::F32, {6 * 14 * 14, 10}, 53)}};
  auto reference = graph::evaluate(g, inputs);
  auto scale = graph::evaluate(g, abs_of(inputs));

  uint64_t before = validation_messages();
  auto exe = lowering::compile(g, device(GetParam()));
  for (const auto& [name, t] : inputs) exe->set(name, t);
  exe->step();
  EXPECT_EQ(compare(exe->get("y"), reference.at("y"), {2e-5, 0}, &scale.at("y")), "") << exe->plan_text();
  EXPECT_EQ(validation_messages(), before) << "the Vulkan validation layer reported messages";
}

TEST_P(LeNetOnDevice, TrainingStepMatchesTheReference) {
  nn::LeNetGraphOptions opt;
  opt.batch = 8;
  graph::Graph g = nn::build_lenet_graph(opt);
  std::map<std::string, graph::Tensor> inputs;
  for (auto& [name, t] : nn::lenet_initial_parameters(7)) inputs[name] = t;
  inputs["x"] = random_tensor(graph::DType::F32, {8, 1, 28, 28}, 61, 0.0, 1.0);
  inputs["y"] = random_ints(graph::DType::I64, {8}, 62, 0, 9);
  auto reference = graph::evaluate(g, inputs);

  uint64_t before = validation_messages();
  auto exe = lowering::compile(g, device(GetParam()));
  for (const auto& [name, t] : inputs) exe->set(name, t);
  exe->step();
  for (const auto& o : g.outputs()) {
    const graph::Tensor& ref = reference.at(o.name);
    double max_abs = 0;
    for (double v : ref.data) max_abs = std::max(max_abs, std::fabs(v));
    EXPECT_EQ(compare(exe->get(o.name), ref, {0, 1e-4 * max_abs}), "") << "output " << o.name;
  }
  EXPECT_EQ(validation_messages(), before) << "the Vulkan validation layer reported messages";
}

INSTANTIATE_TEST_SUITE_P(AllDevices, LeNetOnDevice, testing::ValuesIn(device_ids()),
                         [](const testing::TestParamInfo<std::string>& p) { return test_name_of(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LeNetOnDevice);

}  // namespace
}  // namespace lenet_chain_test
