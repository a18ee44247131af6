// A whole LeNet training step's arithmetic (forward, loss, backward with the backward ops): every parameter
// gradient checked against central differences of the loss, and the cost of one step at batch 64 in float64.
#include <chrono>

#include "tests/ir/graph/evaluator/lenet_graph.h"

namespace spire::graph::test {
namespace {

TEST(EvalLeNet, GradientsMatchCentralDifferencesOfTheLoss) {
  const int64_t batch = 4;
  LeNet net = build_lenet(batch, DType::F64);
  std::map<std::string, Tensor> feeds = lenet_feeds(net, batch, DType::F64, 1);
  std::map<std::string, Tensor> out = evaluate(net.graph, feeds);
  ASSERT_TRUE(std::isfinite(out["loss"].data[0]));

  auto loss_at = [&](const std::string& name, size_t i, double delta) {
    std::map<std::string, Tensor> f = feeds;
    f[name].data[i] += delta;
    return evaluate(net.graph, f)["loss"].data[0];
  };
  const double h = 1e-6;
  for (const auto& [name, shape] : net.parameters) {
    const Tensor& grad = out["grad." + name];
    ASSERT_EQ(grad.shape, shape) << name;
    // A few entries spread over the tensor, the first and last included.
    const size_t n = grad.data.size();
    for (size_t i : {size_t(0), n / 3, (2 * n) / 3 + 1, n - 1}) {
      const double numeric = (loss_at(name, i, h) - loss_at(name, i, -h)) / (2 * h);
      EXPECT_NEAR(grad.data[i], numeric, 1e-7 + 1e-5 * std::abs(numeric)) << name << "[" << i << "]";
    }
  }
}

TEST(EvalLeNet, Batch64StepInFloat64IsWellUnderASecond) {
#if !defined(__OPTIMIZE__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "timing is only meaningful in an optimised build without sanitizers";
#endif
  const int64_t batch = 64;
  LeNet net = build_lenet(batch, DType::F32);
  std::map<std::string, Tensor> feeds = lenet_feeds(net, batch, DType::F32, 5);
  evaluate(net.graph, feeds);  // warm up the allocator
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, Tensor> out = evaluate(net.graph, feeds, DType::F64);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("forward_backward_seconds", std::to_string(seconds));
  std::printf("LeNet batch 64 forward + backward, float64: %.3f s\n", seconds);
  EXPECT_TRUE(std::isfinite(out["loss"].data[0]));
  EXPECT_LT(seconds, 1.0);
}

}  // namespace
}  // namespace spire::graph::test
