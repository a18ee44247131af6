// Winograd's precision at resnet18's channel counts, with a trained network's magnitudes: each 3x3 stride-1 layer
// shape (spatially cut to keep lavapipe quick; the window sums, which set the error, are the real ones: 64 to 512
// channels x 9 taps) runs its forward, input-gradient and weight-gradient programs by the direct-sum GEMM, F(2x2, 3x3)
// and F(4x4, 3x3) on every device present, each compared with the float64 evaluator. Inputs are post-ReLU activations
// (uniform in [0, 1]: all positive, the case where the transforms cancel most), weights Kaiming-uniform for the layer's
// fan-in. The errors are printed (docs/PERFORMANCE.md quotes them) and each must stay within the op's tolerance.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "ir/graph/evaluator.h"
#include "ir/graph/op_table.h"
#include "lowering/executable.h"
#include "lowering/tunable_ops.h"
#include "op_harness/op_harness.h"
#include "tests/tuning/tuning_test_util.h"

using namespace spire;
using graph::DType;
using graph::Graph;
using tuning_test::random_tensor;

namespace {

struct Layer {
  const char* name;
  int64_t n, c, hw;
};

// resnet18's stride-1 3x3 layers, their channels and a cut of their planes (odd sizes where the tiles hang over).
const Layer kLayers[] = {{"layer1", 2, 64, 15}, {"layer2", 2, 128, 14}, {"layer3", 1, 256, 14}, {"layer4", 2, 512, 7}};

enum class Pass { Forward, GradInput, GradWeight };
const char* pass_name(Pass p) { return p == Pass::Forward ? "forward" : p == Pass::GradInput ? "grad_input" : "grad_weight"; }

Graph layer_graph(const Layer& l, Pass pass) {
  const graph::Conv2dOptions o{.padding = {1, 1}};
  const graph::Shape x{l.n, l.c, l.hw, l.hw}, w{l.c, l.c, 3, 3}, y{l.n, l.c, l.hw, l.hw};
  Graph g;
  if (pass == Pass::Forward) g.output("y", g.conv2d(g.input("a", DType::F32, x), g.input("b", DType::F32, w), o));
  if (pass == Pass::GradInput)
    g.output("y", g.conv2d_grad_input(g.input("a", DType::F32, y), g.input("b", DType::F32, w), o, x));
  if (pass == Pass::GradWeight)
    g.output("y", g.conv2d_grad_weight(g.input("a", DType::F32, y), g.input("b", DType::F32, x), o, w));
  return g;
}

// Activations after a ReLU, Kaiming-uniform weights (fan-in c x 9) and gradients of either sign.
std::map<std::string, graph::Tensor> layer_inputs(const Layer& l, Pass pass) {
  const graph::Shape x{l.n, l.c, l.hw, l.hw}, w{l.c, l.c, 3, 3};
  const double bound = std::sqrt(6.0 / double(l.c * 9));
  if (pass == Pass::Forward) return {{"a", random_tensor(DType::F32, x, 11, 0, 1)}, {"b", random_tensor(DType::F32, w, 12, -bound, bound)}};
  if (pass == Pass::GradInput) return {{"a", random_tensor(DType::F32, x, 13)}, {"b", random_tensor(DType::F32, w, 14, -bound, bound)}};
  return {{"a", random_tensor(DType::F32, x, 15)}, {"b", random_tensor(DType::F32, x, 16, 0, 1)}};
}

// The first candidate of each kind: "gemm" (the implicit GEMM's direct sum), "winograd=2", "winograd=4".
std::optional<lowering::heavy::Config> first_of(const lowering::TunableOp& op, const std::string& kind) {
  for (const auto& c : op.candidates) {
    const bool winograd = c.has("winograd");
    if (kind == "gemm" ? (!winograd && c.has("tile_m")) : (winograd && fmt::format("winograd={}", c.get("winograd")) == kind))
      return c;
  }
  return std::nullopt;
}

class WinogradPrecision : public tuning_test::OnDevice {};

TEST_P(WinogradPrecision, StaysWithinTheConvolutionsToleranceAtResnetChannelCounts) {
  for (const Layer& l : kLayers)
    for (Pass pass : {Pass::Forward, Pass::GradInput, Pass::GradWeight}) {
      const Graph g = layer_graph(l, pass);
      const auto inputs = layer_inputs(l, pass);
      const graph::Tensor want = graph::evaluate(g, inputs, DType::F64).at("y");
      const double tol = graph::op_tolerance(g.node(g.outputs().at(0).value).op, false, DType::F32);
      const auto ops = lowering::tunable_ops(g, dev_->info());
      ASSERT_EQ(ops.size(), 1u);
      std::string line = fmt::format("{} {} {}:", dev_->info().id, l.name, pass_name(pass));
      for (const std::string kind : {"gemm", "winograd=2", "winograd=4"}) {
        const auto config = first_of(ops[0], kind);
        ASSERT_TRUE(config) << ops[0].key.text() << " offers no " << kind << " config";
        lowering::MapTuningChoices choices;
        choices.configs[ops[0].key] = *config;
        auto exe = lowering::compile(g, *dev_, {.tuning = &choices});
        for (const auto& [name, t] : inputs) exe->set(name, t);
        exe->step();
        const double err = harness::max_norm_error(exe->get("y"), want);
        EXPECT_LE(err, tol) << ops[0].key.text() << " with " << config->text();
        line += fmt::format("  {} {:.2e}", kind, err);
      }
      std::printf("%s\n", line.c_str());
    }
}

INSTANTIATE_TEST_SUITE_P(Devices, WinogradPrecision, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& info) { return lowering::testing_support::test_name(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WinogradPrecision);

}  // namespace
