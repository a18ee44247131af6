// fold_transposes (passes/fold_transposes.h) and the transposes matmul reads in place (lowering/fuse.h): the
// folded graph computes what the original does (float64 evaluator, random inputs), its rewrites are the ones
// described, and LeNet's training step launches no transpose at all.
#include <gtest/gtest.h>

#include <algorithm>

#include "frontend/lenet.h"
#include "ir/graph/evaluator.h"
#include "passes/fold_transposes.h"
#include "lowering/fuse.h"
#include "lowering/plan.h"
#include "lowering/schedule.h"
#include "tests/support/h100_like_target.h"
#include "tests/support/random_tensor.h"

using namespace spire;
using graph::DType;
using graph::Graph;
using graph::OpKind;

namespace {

int count_scheduled(const Graph& g, OpKind op) {
  int n = 0;
  for (graph::Value v : lowering::schedule(g)) n += g.node(v).op == op;
  return n;
}

using testing_support::uniform_tensor;

void expect_same_results(const Graph& a, const Graph& b, const std::map<std::string, graph::Tensor>& in) {
  const auto ra = graph::evaluate(a, in, DType::F64), rb = graph::evaluate(b, in, DType::F64);
  ASSERT_EQ(ra.size(), rb.size());
  for (const auto& [name, t] : ra) {
    ASSERT_EQ(rb.at(name).shape, t.shape) << name;
    for (size_t i = 0; i < t.data.size(); ++i) EXPECT_DOUBLE_EQ(rb.at(name).data[i], t.data[i]) << name << " " << i;
  }
}

// y = (x W^T)^T + W^T^T-ish chains: a transpose of a transpose, and a transpose of a product read only by it.
Graph chains() {
  Graph g;
  auto x = g.input("x", DType::F64, {5, 7});
  auto w = g.input("w", DType::F64, {3, 7});
  auto wt = g.transpose(w);                  // [7, 3]
  auto back = g.transpose(wt);               // [3, 7]: cancels
  auto prod = g.matmul(x, wt);               // [5, 3]
  g.output("yt", g.transpose(prod));         // [3, 5] = w x^T
  g.output("z", g.add(back, w));
  return g;
}

TEST(FoldTransposes, CancelsPairsAndMovesTransposesOntoProductOperands) {
  const Graph g = chains();
  const Graph f = passes::fold_transposes(g);
  EXPECT_EQ(count_scheduled(g, OpKind::Permute), 3);
  // Left: only the transposes read by products (w^T in x w^T is gone too: (x w^T)^T = w x^T needs x^T only).
  EXPECT_EQ(count_scheduled(f, OpKind::Permute), 1);
  EXPECT_EQ(count_scheduled(f, OpKind::Matmul), 1);
  for (graph::Value v : lowering::schedule(f))
    if (f.node(v).op == OpKind::Permute) {
      EXPECT_TRUE(lowering::absorbed_transpose(f, v)) << f.node(v).name;
    }
  expect_same_results(g, f, {{"x", uniform_tensor({5, 7}, 1)}, {"w", uniform_tensor({3, 7}, 2)}});
}

TEST(FoldTransposes, KeepsATransposeThatIsAnOutputOrReadByOtherOps) {
  Graph g;
  auto x = g.input("x", DType::F64, {4, 6});
  auto xt = g.transpose(x);
  g.output("xt", xt);                                   // stored: keeps its node and buffer
  g.output("r", g.relu(g.transpose(g.input("w", DType::F64, {6, 4}))));  // read by a pointwise op
  const Graph f = passes::fold_transposes(g);
  EXPECT_EQ(count_scheduled(f, OpKind::Permute), 2);
  for (graph::Value v : lowering::schedule(f))
    if (f.node(v).op == OpKind::Permute) {
      EXPECT_FALSE(lowering::absorbed_transpose(f, v)) << f.node(v).name;
    }
  expect_same_results(g, f, {{"x", uniform_tensor({4, 6}, 3)}, {"w", uniform_tensor({6, 4}, 4)}});
}

TEST(FoldTransposes, LeNetsTrainingStepLaunchesNoTranspose) {
  nn::LeNetGraphOptions o;
  o.batch = 64;
  o.sgd = true;
  o.sgd_options = {.lr = 0.05, .momentum = 0.9, .weight_decay = 0};
  const Graph g = nn::build_lenet_graph(o);
  EXPECT_GE(count_scheduled(g, OpKind::Permute), 12) << "the step as autograd builds it is full of transposes";
  const lowering::Plan plan = lowering::lower(g, testing_support::h100_like_target());
  for (const auto& k : plan.kernels) EXPECT_NE(k.name.rfind("permute", 0), 0u) << k.name;
  // 69 launches at batch 64 before the transposes were folded, 57 after (spire_bench_lenet_step prints it).
  EXPECT_LE(plan.launches.size(), 57u);
  // The float64 evaluator on the folded graph gives the original step's loss and gradients.
  std::map<std::string, graph::Tensor> in;
  for (const auto& [name, t] : nn::lenet_initial_parameters(1)) in[name] = t;
  graph::Tensor x = uniform_tensor({64, 1, 28, 28}, 5, DType::F32);
  graph::Tensor y(DType::I64, {64}, 0);
  for (size_t i = 0; i < y.data.size(); ++i) y.data[i] = double(i % 10);
  in["x"] = x;
  in["y"] = y;
  for (graph::Value v : g.values())
    if (g.node(v).op == OpKind::State) in[g.node(v).name] = graph::Tensor(g.type(v).dtype, g.type(v).shape, 0);
  expect_same_results(g, passes::fold_transposes(g), in);
}

}  // namespace
