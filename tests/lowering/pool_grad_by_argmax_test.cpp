// pool_grad_by_argmax (passes/pool_grad_by_argmax.h): a max pooling's gradient reads the positions the forward
// pooling found (max_pool2d_argmax) instead of the pooled input, the ReLU's mask moves onto the pooled gradient, the
// float64 evaluator gives the same gradients (ties and NaNs included), the rewrite leaves alone a gradient without its
// forward pooling, and LeNet's step keeps no ReLU output for its gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "frontend/lenet.h"
#include "ir/graph/evaluator.h"
#include "lowering/executable.h"
#include "lowering/fuse.h"
#include "passes/pool_grad_by_argmax.h"
#include "passes/canonical.h"
#include "tests/lowering/device_list.h"
#include "tests/support/on_device.h"
#include "tests/support/random_tensor.h"

namespace pool_grad_by_argmax_test {  // the file's own names: test executables build as unity batches

using namespace spire;
using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Value;

namespace {

// y = relu(x), p = max_pool2d(y); outputs the pooling, the masked gradient and the plain one.
Graph pool_and_grads(const graph::Pool2dOptions& o, const graph::Shape& x_shape) {
  Graph g;
  Value x = g.input("x", DType::F32, x_shape);
  Value y = g.relu(x);
  Value p = g.max_pool2d(y, o);
  Value up = g.input("g", DType::F32, g.type(p).shape);
  g.output("p", p);
  g.output("masked", g.relu_grad(g.max_pool2d_grad(up, y, o), y));
  g.output("plain", g.max_pool2d_grad(up, y, o));
  return g;
}

// Whole numbers in [-3, 3] (many ties within a window, zeros after the ReLU) and a few NaNs.
graph::Tensor tied_input(const graph::Shape& shape) {
  graph::Tensor t = testing_support::uniform_tensor(shape, 7, DType::F32);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = std::round(t.data[i] * 3);
  for (size_t i = 5; i < t.data.size(); i += 37) t.data[i] = NAN;
  return t;
}

const graph::Node& output_node(const Graph& g, const std::string& name) {
  for (const auto& o : g.outputs())
    if (o.name == name) return g.node(o.value);
  throw std::logic_error("no output " + name);
}

TEST(PoolGradByArgmax, GradientsReadThePositions) {
  const Graph r = passes::pool_grad_by_argmax(pool_and_grads({}, {2, 3, 8, 8}));
  int positions = 0;
  for (Value v : r.values()) {
    EXPECT_NE(r.node(v).op, OpKind::MaxPool2dGrad) << r.node(v).name;
    positions += r.node(v).op == OpKind::MaxPool2dArgmax;
  }
  EXPECT_EQ(positions, 1);  // one per pooling, however many gradients read it
  const graph::Node& masked = output_node(r, "masked");
  ASSERT_EQ(masked.op, OpKind::MaxPool2dGradArgmax);
  const graph::Node& mask = r.node(masked.inputs[0]);
  ASSERT_EQ(mask.op, OpKind::ReluGrad);
  EXPECT_EQ(r.node(mask.inputs[1]).op, OpKind::MaxPool2d);  // the mask of the pooled values
  EXPECT_EQ(r.node(masked.inputs[1]).op, OpKind::MaxPool2dArgmax);
  EXPECT_EQ(output_node(r, "plain").op, OpKind::MaxPool2dGradArgmax);
  EXPECT_EQ(r.node(output_node(r, "plain").inputs[0]).op, OpKind::Input);
}

// The same gradients from the float64 evaluator, exactly: 2x2 windows and overlapping padded 3x3 ones.
TEST(PoolGradByArgmax, TheEvaluatorGivesTheSameGradients) {
  for (const graph::Pool2dOptions& o : {graph::Pool2dOptions{}, graph::Pool2dOptions{{3, 3}, {2, 2}, {1, 1}}}) {
    const Graph g = pool_and_grads(o, {2, 3, 8, 9});
    const Graph r = passes::pool_grad_by_argmax(g);
    std::map<std::string, graph::Tensor> in{{"x", tied_input({2, 3, 8, 9})}};
    in["g"] = testing_support::uniform_tensor(g.type(g.outputs()[0].value).shape, 8, DType::F32);
    const auto want = graph::evaluate(g, in, DType::F64), got = graph::evaluate(r, in, DType::F64);
    for (const char* name : {"masked", "plain"}) {
      const graph::Tensor& a = want.at(name);
      const graph::Tensor& b = got.at(name);
      ASSERT_EQ(a.shape, b.shape);
      for (size_t i = 0; i < a.data.size(); ++i) ASSERT_EQ(a.data[i], b.data[i]) << name << " element " << i;
    }
  }
}

// Without the graph's own forward pooling of the same window, a gradient stays as it is.
TEST(PoolGradByArgmax, LeavesAGradientWithoutItsForwardPooling) {
  Graph g;
  Value y = g.input("y", DType::F32, {1, 2, 8, 8});
  Value up = g.input("g", DType::F32, {1, 2, 4, 4});
  g.output("other_window", g.max_pool2d(y, {{3, 3}, {2, 2}, {1, 1}}));
  g.output("grad", g.max_pool2d_grad(up, y, {}));
  const Graph r = passes::pool_grad_by_argmax(g);
  EXPECT_EQ(output_node(r, "grad").op, OpKind::MaxPool2dGrad);
  for (Value v : r.values()) EXPECT_NE(r.node(v).op, OpKind::MaxPool2dArgmax);
}

// Bad positions are refused by name: a float tensor where the positions go, a shape that is not the pooled one, and
// (by the evaluator) a position outside its window.
TEST(PoolGradByArgmax, BadPositionsAreRefusedByName) {
  Graph g;
  Value up = g.input("g", DType::F32, {1, 2, 4, 4});
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Graph refused;
  Value up2 = refused.input("g", DType::F32, {1, 2, 4, 4});
  Value floats = refused.input("f", DType::F32, {1, 2, 4, 4});
  EXPECT_NE(message([&] { refused.max_pool2d_grad_argmax(up2, floats, {}, {1, 2, 8, 8}); }).find("must be i32"),
            std::string::npos);
  Value wrong = refused.input("w", DType::I32, {1, 2, 3, 4});
  EXPECT_NE(message([&] { refused.max_pool2d_grad_argmax(up2, wrong, {}, {1, 2, 8, 8}); }).find("one position per window"),
            std::string::npos);
  Value at = g.input("a", DType::I32, {1, 2, 4, 4});
  g.output("grad", g.max_pool2d_grad_argmax(up, at, {}, {1, 2, 8, 8}));
  graph::Tensor positions = testing_support::uniform_tensor({1, 2, 4, 4}, 3, DType::I32);
  for (double& v : positions.data) v = 0;
  positions.data[5] = 4;  // a 2x2 window has positions 0..3
  const std::map<std::string, graph::Tensor> in{
      {"g", testing_support::uniform_tensor({1, 2, 4, 4}, 4, DType::F32)}, {"a", positions}};
  EXPECT_NE(message([&] { graph::evaluate(g, in, DType::F64); }).find("position 4 is not an element of the window"),
            std::string::npos);
}

class PoolGradByArgmaxOnDevice : public testing_support::OnDevice {};

// On every device present, against the float64 evaluator of the graph before the rewrite: windows that tile the input
// (one invocation per window) and overlapping padded ones (one per element), ties after the ReLU (no NaNs: Vulkan
// compilers need not keep them, NVIDIA's did not through the ReLU on the H100); the pooling stores its
// positions in its own launch (a side output), and the ReLU's mask is computed in the gradient's loads (a prologue).
TEST_P(PoolGradByArgmaxOnDevice, MatchesTheEvaluatorBeforeTheRewrite) {
  for (const graph::Pool2dOptions& o : {graph::Pool2dOptions{}, graph::Pool2dOptions{{3, 3}, {2, 2}, {1, 1}}}) {
    const Graph g = pool_and_grads(o, {2, 3, 8, 9});
    const Graph r = passes::canonicalize(g);
    const lowering::Fusion f = lowering::plan_fusion(r);
    for (Value v : r.values()) {
      if (r.node(v).op == OpKind::MaxPool2dArgmax) {
        EXPECT_TRUE(f.is_side_output[size_t(v.id)]);
      }
    }
    std::map<std::string, graph::Tensor> in{{"x", tied_input({2, 3, 8, 9})}};
    for (double& v : in["x"].data) v = std::isnan(v) ? 1.0 : v;
    in["g"] = testing_support::uniform_tensor(g.type(g.outputs()[0].value).shape, 8, DType::F32);
    const auto want = graph::evaluate(g, in, DType::F64);
    auto exe = lowering::compile(g, *dev_);
    for (const auto& [name, t] : in) exe->set(name, t);
    exe->step();
    for (const char* name : {"p", "masked", "plain"}) {
      const graph::Tensor got = exe->get(name);
      const graph::Tensor& ref = want.at(name);
      ASSERT_EQ(got.data.size(), ref.data.size());
      for (size_t i = 0; i < ref.data.size(); ++i) {
        if (std::isnan(ref.data[i])) {
          ASSERT_TRUE(std::isnan(got.data[i])) << name << " element " << i;
        } else {
          ASSERT_NEAR(got.data[i], ref.data[i], 1e-6 * (1 + std::abs(ref.data[i]))) << name << " element " << i;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, PoolGradByArgmaxOnDevice, testing::ValuesIn(lowering::testing_support::device_ids()),
                         [](const auto& p) { return lowering::testing_support::test_name(p.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PoolGradByArgmaxOnDevice);

// LeNet's step: no gradient reads a ReLU's output that is pooled; each pooling's positions follow it.
TEST(PoolGradByArgmax, LeNetsGradientsReadNoPooledInput) {
  nn::LeNetGraphOptions o;
  o.batch = 4;
  const Graph g = passes::canonicalize(nn::build_lenet_graph(o));
  const std::vector<std::vector<Value>> users = g.users();
  for (Value v : g.values()) {
    const graph::Node& n = g.node(v);
    EXPECT_NE(n.op, OpKind::MaxPool2dGrad) << n.name;
    if (n.op != OpKind::MaxPool2d) continue;
    ASSERT_LT(v.id + 1, g.size());
    const graph::Node& next = g.node(v.id + 1);
    EXPECT_EQ(next.op, OpKind::MaxPool2dArgmax);
    EXPECT_EQ(next.name, n.name + ".argmax");
    // The pooled input (a ReLU's output): read by the pooling and its positions only.
    for (Value u : users[size_t(n.inputs[0].id)])
      EXPECT_TRUE(g.node(u).op == OpKind::MaxPool2d || g.node(u).op == OpKind::MaxPool2dArgmax) << g.node(u).name;
  }
}

}  // namespace
}  // namespace pool_grad_by_argmax_test
