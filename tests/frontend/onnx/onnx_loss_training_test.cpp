// An imported model whose graph ends in ONNX's loss op trains (issue 52's "the loss ops get their training use"):
// export_models.py's classifier returns its own loss, SoftmaxCrossEntropyLoss (classifier_ce) or
// NegativeLogLikelihoodLoss with class weights (classifier_nll). The test imports it, differentiates the loss with
// respect to the linear layers' weights and biases (autograd::grad), appends torch.optim.SGD's update
// (autograd::sgd_step, lr 0.5, momentum 0.9) and runs six steps on one batch on every device present. Each step's
// loss must equal PyTorch's for the same training (its own six losses, in NAME.train.safetensors) within 1e-4
// relative, and fall (the batch is the same each step).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autograd/grad.h"
#include "autograd/optimizers.h"
#include "frontend/onnx/onnx_import.h"
#include "io/tensor_file.h"
#include "lowering/executable.h"
#include "tests/lowering/device_list.h"
#include "tests/support/on_device.h"

namespace spire {
namespace {

std::string model(const std::string& file) { return std::string(MODELS_DIR) + "/" + file; }

class LossModelTraining : public testing_support::OnDevice {};

TEST_P(LossModelTraining, SixStepsGivePyTorchsLosses) {
  for (const std::string name : {"classifier_ce", "classifier_nll"}) {
    SCOPED_TRACE(name);
    onnx_import::ImportedModel m = onnx_import::import_model(model(name + ".onnx"));
    graph::Graph& g = m.graph;
    graph::Value loss{-1};
    for (const auto& o : g.outputs())
      if (o.name == "y") loss = o.value;
    ASSERT_GE(loss.id, 0) << "the model's loss output";
    ASSERT_EQ(g.type(loss).numel(), 1);
    // The linear layers' weights and biases, as torch.optim.SGD(m.parameters()) takes them (not the class weights,
    // a buffer).
    std::vector<graph::Value> params;
    for (graph::Value v : g.values()) {
      const graph::Node& n = g.node(v);
      if (n.op == graph::OpKind::Parameter && (n.name.rfind("l1.", 0) == 0 || n.name.rfind("l2.", 0) == 0))
        params.push_back(v);
    }
    ASSERT_EQ(params.size(), 4u);
    const std::vector<graph::Value> grads = autograd::grad(g, loss, params);
    autograd::sgd_step(g, params, grads, {.lr = 0.5, .momentum = 0.9});

    const auto train = io::load_tensors(model(name + ".train.safetensors"));
    const graph::Tensor& want = train.at("losses");
    auto exe = lowering::compile(g, *dev_);
    for (const auto& [weight, t] : m.weights) exe->set(weight, t);
    exe->set("x", train.at("x"));
    exe->set("target", train.at("target"));
    std::vector<double> got;
    for (int64_t step = 0; step < want.numel(); ++step) {
      exe->step();
      got.push_back(exe->get("y")[0]);
      EXPECT_NEAR(got.back(), want[step], 1e-4 * std::abs(want[step])) << "step " << step;
    }
    EXPECT_LT(got.back(), 0.5 * got.front()) << "the loss falls on a batch seen again";
    std::printf("%s on %s: losses %s (PyTorch's last %.6f)\n", name.c_str(), GetParam().c_str(),
                fmt::format("{:.6f}", fmt::join(got, " ")).c_str(), want[want.numel() - 1]);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, LossModelTraining, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LossModelTraining);

}  // namespace
}  // namespace spire
